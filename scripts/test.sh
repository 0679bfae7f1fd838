#!/usr/bin/env bash
# The test command: installs what the tests need, then runs every test of the workspace
# (Rust unit and integration tests, the C API tests built with gcc, multi-process and
# network-namespace tests) and the doctests (`--all-targets` leaves them out). Run as root on
# Linux (SCHED_FIFO, namespaces, veth, FUSE). Arguments go to both cargo test commands.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --workspace --all-targets "$@"
cargo test --workspace --doc "$@"
