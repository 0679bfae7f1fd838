#!/usr/bin/env bash
# The test command: installs what the tests need, then runs every test of the workspace
# (Rust unit and integration tests, the C API tests built with gcc, multi-process and
# network-namespace tests), the doctests (`--all-targets` leaves them out) and the loom models
# (scripts/loom.sh). Run as root on Linux (SCHED_FIFO, namespaces, veth, FUSE). Arguments go to
# both cargo test commands.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --workspace --all-targets "$@"
cargo test --workspace --doc "$@"
# The loom models (a --cfg loom release build of partix-shm in its own target dir, then about
# 1-3 minutes of model checking; none of them runs under plain cargo test).
bash scripts/loom.sh
