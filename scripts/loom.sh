#!/usr/bin/env bash
# Run the loom models of partix-shm (crates/partix-shm/tests/loom.rs): the begin/end sampling
# protocol (messages of 8 / 16 / 8 bytes, the bounded retry of SlotView::read), the SPSC ring (single messages, batches, the split data/control layout whose data
# the destination maps read-only), the two-sided sampling path and queue credits (cumulative
# acks; the sender, manager and receiver parking on their notifiers), and the futex notifier (no lost wake-up, also across time-outs); and (tests/loom_edges.rs) a two-sided queue
# manager killed in the middle of a move, then replaced (no loss, no duplicate).
# LOOM_MAX_PREEMPTIONS bounds the explored interleavings (default 3: about 55 s of model
# checking on 2 cores for both files, 28 s of it the queue wake-up model; 2 is quicker, 4 much
# slower). Uses its own target dir (LOOM_TARGET_DIR,
# default target/loom) so the --cfg loom build does not evict the normal one.
set -euo pipefail
cd "$(dirname "$0")/.."
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
export RUSTFLAGS="${RUSTFLAGS:-} --cfg loom"
export CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-target/loom}"
time cargo test -p partix-shm --release --test loom -- --test-threads=2 "$@"
time cargo test -p partix-shm --release --test loom_edges -- --test-threads=2 "$@"
