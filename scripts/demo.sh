#!/usr/bin/env bash
# The main job: installs what is needed, builds, and runs the default demo module
# (examples/uav: the unmanned-helicopter workload, one C and one Rust partition).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Every binary of partix-cli: `partix` and the demo's Rust partition (uav-vsp), which `partix run`
# finds beside itself (`cargo run` alone builds only `partix`).
cargo build --release -p partix-cli --bins
cargo run --release -p partix-cli --bin partix -- "$@"
