#!/usr/bin/env bash
# Runs every loom model of cellrate with fixed settings. Usage: ./loom-tests/run.sh [test filter]
#
# Most two-thread models run exhaustively. The keyed insert and reuse models (long runs of
# two threads) and the three-thread models set a preemption bound in their own code (5 for the
# former, 2 or 3 for the latter). The keyed models take most of the run; a cold build of the
# loom configuration comes on top (CONTRIBUTING.md says how long both take).
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg loom ${RUSTFLAGS:-}"
export LOOM_MAX_BRANCHES="${LOOM_MAX_BRANCHES:-10000}"
# A separate target dir: --cfg loom rebuilds every crate, and would evict the normal build.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom"
# The `loom` profile: release, except for the crates only loom's logging uses (Cargo.toml).
exec cargo test --profile loom -p cellrate-loom-tests -- "$@"
