#!/usr/bin/env bash
# Run every cargo-fuzz target of the repository for a short time (CI smoke run).
#
#   scripts/fuzz-smoke.sh [SECONDS]      (default 20 seconds per target; at least 1: libFuzzer
#                                         reads -max_total_time=0 as "no limit")
#
# Fuzz directories: fuzz/ and crates/*/fuzz/ (each a cargo-fuzz project with its own [workspace]
# and its own committed Cargo.lock, so a run builds the same dependencies every time).
# Installs cargo-fuzz $CARGO_FUZZ_VERSION from crates.io (--locked) if cargo-fuzz is missing.
# cargo-fuzz needs nightly flags; on the stable toolchain they are enabled with RUSTC_BOOTSTRAP=1.
# New inputs found during the run go to a temporary directory, so the seed corpora in the
# repository stay as committed. A crash leaves its input under <fuzz dir>/artifacts/<target>/ and
# makes this script exit non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

# The cargo-fuzz this script installs when none is there (the one CI has used).
CARGO_FUZZ_VERSION=0.13.2

secs="${1:-20}"
case "$secs" in
    ''|*[!0-9]*) echo "usage: $0 [SECONDS] (a whole number of seconds, at least 1)" >&2; exit 2 ;;
esac
# 0 (or 00) would fuzz the first target forever: libFuzzer's -max_total_time=0 means no limit.
secs=$((10#$secs))
if [ "$secs" -lt 1 ]; then
    echo "usage: $0 [SECONDS] (at least 1: libFuzzer reads -max_total_time=0 as no limit)" >&2
    exit 2
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz-smoke: installing cargo-fuzz $CARGO_FUZZ_VERSION"
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi
export RUSTC_BOOTSTRAP=1
[ -n "${CARGO_TARGET_DIR:-}" ] || unset CARGO_TARGET_DIR
sanitizer="${FUZZ_SANITIZER:-address}"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

failed=0
ran=0
for dir in fuzz crates/*/fuzz; do
    [ -f "$dir/Cargo.toml" ] || continue
    [ -d "$dir/fuzz_targets" ] || continue
    for src in "$dir"/fuzz_targets/*.rs; do
        target=$(basename "$src" .rs)
        echo "fuzz-smoke: $dir $target for ${secs}s"
        mkdir -p "$scratch/$dir/$target"
        seeds=()
        [ -d "$dir/corpus/$target" ] && seeds+=("$PWD/$dir/corpus/$target")
        if (cd "$dir" && cargo fuzz run --sanitizer "$sanitizer" "$target" \
                "$scratch/$dir/$target" "${seeds[@]}" -- -max_total_time="$secs" -print_final_stats=1); then
            ran=$((ran + 1))
        else
            echo "fuzz-smoke: FAILED: $dir $target (see $dir/artifacts/$target/)" >&2
            failed=$((failed + 1))
        fi
    done
done
echo "fuzz-smoke: $ran target(s) passed, $failed failed"
[ "$failed" -eq 0 ]
