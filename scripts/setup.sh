#!/usr/bin/env bash
# Install everything the build and the tests need on a fresh Debian machine (run as root).
# Debian packages are listed one per line in scripts/deps/*.txt ('#' starts a comment).
set -euo pipefail
cd "$(dirname "$0")/.."

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
