#!/usr/bin/env bash
# Run the loom models of partix-shm (crates/partix-shm/tests/loom.rs): the begin/end sampling
# protocol, the SPSC ring and the two-sided cumulative-ack flow control.
# LOOM_MAX_PREEMPTIONS bounds the explored interleavings (default 2; 3 is exhaustive enough for
# these models but slower). Uses its own target dir so the --cfg loom build does not evict the
# normal one.
set -euo pipefail
cd "$(dirname "$0")/.."
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
export RUSTFLAGS="${RUSTFLAGS:-} --cfg loom"
export CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-target/loom}"
time cargo test -p partix-shm --release --test loom -- --test-threads=2 "$@"
