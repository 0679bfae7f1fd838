#!/usr/bin/env bash
# The main job: installs what is needed, builds, and runs the default demo module
# (examples/uav: the unmanned-helicopter workload, one C and one Rust partition).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo run --release -- "$@"
