#!/usr/bin/env bash
# Install everything the build and the tests need on a fresh Debian machine (run as root).
# Debian packages are listed one per line in scripts/deps/*.txt ('#' starts a comment).
set -euo pipefail
cd "$(dirname "$0")/.."

# Rust first: without a new enough toolchain nothing below helps. Debian's own rustc is too old
# (Debian 12 ships 1.63, Debian 13 1.85), and this script installs no toolchain itself: it says
# what is needed and how to get it. The minimum is the workspace's `rust-version` (Cargo.toml).
need=$(sed -n 's/^rust-version = "\([0-9.]*\)".*/\1/p' Cargo.toml)
[ -n "$need" ] || { echo "setup: error: no rust-version in Cargo.toml's [workspace.package]" >&2; exit 1; }
rustup_hint="install Rust $need or newer with rustup (https://rustup.rs): curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y, then \`. \"\$HOME/.cargo/env\"\` and run this script again"
if command -v rustup >/dev/null 2>&1; then
    rustup_hint="run \`rustup update stable\` (rustup is installed), or \`rustup default stable\` if another toolchain is the default"
fi
# Print "X.Y.Z" from the output of `TOOL --version` (`rustc 1.95.0 (59807616e 2026-04-14)`).
version_of() { "$1" --version 2>/dev/null | sed -n 's/^[a-z-]* \([0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*\).*/\1/p'; }
# True when version $1 is at least version $2.
at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }
for tool in cargo rustc; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "setup: error: \`$tool\` not found; partix needs Rust $need or newer (cargo and rustc)" >&2
        echo "  help: $rustup_hint" >&2
        exit 1
    fi
    have=$(version_of "$tool")
    if [ -z "$have" ] || ! at_least "$have" "$need"; then
        echo "setup: error: $tool ${have:-(unknown version)} at $(command -v "$tool") is too old; partix needs Rust $need or newer" >&2
        echo "  help: $rustup_hint" >&2
        exit 1
    fi
done

pkgs=$(cat scripts/deps/*.txt 2>/dev/null | sed 's/#.*//' | tr -s ' \n' '\n' | sort -u | tr '\n' ' ')
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "setup: installing Debian packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# Rust components used by CI.
if command -v rustup >/dev/null 2>&1; then
    rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
    rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
fi
echo "setup: ok"
