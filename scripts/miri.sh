#!/usr/bin/env bash
# Runs the keyed churn test (tests/keyed_churn.rs) under Miri, whose weak-memory emulation lets
# an atomic load return an older value of its word where the memory model allows it, over many
# scheduling seeds. Not part of .ci/run: it needs a nightly toolchain with the miri component
# (`rustup +nightly component add miri rust-src`) and takes minutes.
#
# Usage: scripts/miri.sh [extra cargo test arguments]
#   MIRI_SEEDS=0..256 scripts/miri.sh     # the seed range (default 0..64)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo +nightly miri --version >/dev/null 2>&1; then
  echo "scripts/miri.sh: no nightly toolchain with miri here; nothing was run." >&2
  echo "Install it with: rustup toolchain install nightly --component miri rust-src" >&2
  exit 1
fi
seeds="${MIRI_SEEDS:-0..64}"
# A separate target directory: Miri builds every crate for its own interpreter.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/miri"
export MIRIFLAGS="-Zmiri-many-seeds=${seeds} ${MIRIFLAGS:-}"
echo "Miri, seeds ${seeds}: tests/keyed_churn.rs"
exec cargo +nightly miri test --test keyed_churn "$@"
