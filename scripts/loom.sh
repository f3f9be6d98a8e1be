#!/usr/bin/env bash
# Runs the loom models of cellrate (src/loom_tests.rs says where they are) with fixed settings:
# the library's tests built with `--cfg loom`, which are the models alone.
#
# Usage: scripts/loom.sh [test filter]
#
# Most two-thread models run exhaustively. The others set a preemption bound in their own code,
# stated in each model's doc comment (`grep -rn 'bounded(' src` lists them): the keyed insert,
# reuse and eviction models 5, the keyed re-insert and start_empty takeover models 4, the keyed
# duplicate-insert models 3, and the three-thread models 2 to 4.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg loom ${RUSTFLAGS:-}"
export LOOM_MAX_BRANCHES="${LOOM_MAX_BRANCHES:-10000}"
# A separate target dir: --cfg loom rebuilds every crate, and would evict the normal build.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom"
# The `loom` profile: release, except for the crates only loom's logging uses (Cargo.toml).
cargo_test=(cargo test -p cellrate --lib --profile loom)

if [ $# -gt 0 ]; then
  exec "${cargo_test[@]}" -- "$@"
fi

# One model takes about as long as all the others together, and libtest would start it late
# (in name order): it runs in a process of its own from the start, beside one process that
# runs every other model, one at a time, at a lower priority, so that on a busy machine (as in
# .ci/run, beside the compiling steps) the model that bounds the run's time goes first.
long=keyed::table::loom_tests::insert_tests::two_inserters_of_one_key_make_one_bucket
artifacts=$("${cargo_test[@]}" --no-run --message-format=json-render-diagnostics)
binary=$(grep -o '"executable":"[^"]*"' <<<"$artifacts" | cut -d'"' -f4)
if [ "$("$binary" --list --format=terse --exact "$long")" != "$long: test" ]; then
  echo "scripts/loom.sh: the library's tests have no model $long; update this script" >&2
  exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$binary" --exact "$long" >"$log" 2>&1 &
long_pid=$!

status=0
echo "$binary"
nice -n 10 "$binary" --test-threads=1 --exact --skip "$long" || status=1
echo "$binary --exact $long"
wait "$long_pid" || status=1
cat "$log"
exit "$status"
