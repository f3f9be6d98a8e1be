#!/usr/bin/env bash
# Runs every loom model of cellrate with fixed settings. Usage: ./loom-tests/run.sh [test filter]
#
# Two-thread models run exhaustively; three-thread models set a preemption bound of 3 in their
# own code. The whole run took about 1 minute on the 2-core development machine (release build
# included; about 2 s of model checking).
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg loom ${RUSTFLAGS:-}"
export LOOM_MAX_BRANCHES="${LOOM_MAX_BRANCHES:-10000}"
# A separate target dir: --cfg loom rebuilds every crate, and would evict the normal build.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom"
exec cargo test --release -p cellrate-loom-tests -- "$@"
