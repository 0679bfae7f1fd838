#!/usr/bin/env bash
# The test command: installs what the tests need, then runs every test of the workspace
# (Rust unit and integration tests, the C API tests built with gcc, multi-process and
# network-namespace tests). Run as root on Linux (SCHED_FIFO, namespaces, veth, FUSE).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --workspace --all-targets "$@"
