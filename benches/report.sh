#!/usr/bin/env bash
# Reruns a short version of every benchmark comparison, then rewrites the generated section of
# BENCHMARKS.md and benches/chart.svg from the results (benches/report.py) and prints a
# three-line summary of the ratios for the README.
#
# Usage: benches/report.sh [--no-run]     (works from any directory)
#   --no-run   skip the benchmarks; regenerate from the results of the last run of this script.
# Environment:
#   REPORT_WARM_UP=1      criterion warm-up seconds per benchmark
#   REPORT_MEASURE=2      criterion measurement seconds per benchmark
#   REPORT_FEATURES=quanta  cargo features of cellrate-benches for every suite (plus each one's
#                         required ones)
#   REPORT_ROUNDS=3       rounds of the headline rows (REPORT_REPEAT): round 1 is the full run,
#                         each later round reruns only those rows; a repeated row's figure is
#                         the median of its rounds' medians
#   REPORT_REPEAT=regex   criterion filter of the repeated rows (default: the headline rows)
#
# Every suite of the one bench binary of cellrate-benches (benches/main.rs) is run, `core`
# first. `core` must succeed; every other suite is optional: if it fails (a missing feature, no
# Redis server, ...) it is reported and skipped. Criterion suites get short CLI settings; the
# plain suites (e.g. `paired`, `keyed_memory`) run as they are and their output is kept.
set -euo pipefail

die() { echo "report.sh: error: $*" >&2; exit 1; }
say() { echo "report.sh: $*" >&2; }

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$script_dir/.." && pwd)
cd "$repo"

run_benches=1
case "${1:-}" in
    "") ;;
    --no-run) run_benches=0 ;;
    -h|--help) sed -n '2,20s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
esac

command -v cargo >/dev/null || die "cargo not found on PATH"
command -v python3 >/dev/null || die "python3 not found on PATH (report.py needs Python 3)"
[[ -f Cargo.toml ]] || die "no Cargo.toml in $repo"

warm_up=${REPORT_WARM_UP:-1}
measure=${REPORT_MEASURE:-2}
features=${REPORT_FEATURES:-quanta}
rounds=${REPORT_ROUNDS:-3}
# The headline rows: the allowed path against its floor, 2 threads on one hot limiter, and the
# keyed checks at 1,000 and 1,000,000 u64 keys.
repeat=${REPORT_REPEAT:-'^(direct/allowed_at/(cellrate|governor|floor_cas)$|contention/allowed/(cellrate|governor|mutex_bucket|floor_cas)/|keyed_check_1000(000)?_keys/(cellrate_at_now|cellrate_huge_pages|cellrate_cached|governor)/)'}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "REPORT_ROUNDS must be a positive integer, not '$rounds'"

# The suites of benches/main.rs, one per line: name|required features (comma-separated)|kind|
# criterion filter (`|`, not a tab: `read` would merge the tabs around an empty field). `core`
# first.
suites='core||criterion|^(direct|contention)/
keyed||criterion|^keyed_
keyed_memory||plain|
keyed_paired||plain|
paired||plain|
redis|redis|plain|'

target_dir=$(cargo metadata --no-deps --format-version 1 \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])') \
    || die "cargo metadata failed"
[[ -n "$target_dir" ]] || die "could not find cargo's target directory"
report_dir="$target_dir/report"
manifest="$report_dir/runs.tsv"
snapshots="$report_dir/rounds"
mkdir -p "$report_dir"

# Copies the criterion results written since the file `$2` was touched into round `$1`'s
# snapshot, keeping their paths and times: the next round overwrites criterion's own copies.
snapshot() {
    local round=$1 since=$2 estimates dir
    while IFS= read -r estimates; do
        dir=$(dirname "${estimates#"$target_dir/criterion/"}")
        mkdir -p "$snapshots/$round/$dir"
        cp -p "$(dirname "$estimates")"/{benchmark,estimates}.json "$snapshots/$round/$dir/"
    done < <(find "$target_dir/criterion" -path '*/new/estimates.json' -newer "$since" 2>/dev/null)
}

# Runs one suite (round `$1`, suite `$2`, required features `$3`, kind `$4`, criterion filter
# `$5`) and records it in the manifest; returns non-zero if it failed.
run_suite() {
    local round=$1 name=$2 required=$3 kind=$4 filter=$5 feats=$features out begin end status
    [[ -n "$required" ]] && feats="$feats,$required"
    cmd=(cargo bench -p cellrate-benches --features "$feats" --)
    if [[ $kind == criterion ]]; then
        cmd+=(--warm-up-time "$warm_up" --measurement-time "$measure" --noplot "$filter")
    else
        cmd+=("$name")
    fi
    out="$report_dir/$name.out"
    (( round > 1 )) && out="$report_dir/$name.round$round.out"
    say "=== round $round: $name ($kind): ${cmd[*]}"
    begin=$(date +%s)
    touch "$report_dir/started"
    if "${cmd[@]}" </dev/null | tee "$out"; then status=ok; else status=failed; fi
    end=$(( $(date +%s) + 1 ))
    say "=== round $round: $name: $status in $(( end - 1 - begin )) s"
    if [[ $kind == criterion ]]; then snapshot "$round" "$report_dir/started"; fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$name" "$kind" "$status" "$begin" "$end" "${cmd[*]}" "$out" "$round" >>"$manifest"
    [[ $status == ok ]]
}

if (( run_benches )); then
    started=$(date +%s)
    : >"$manifest"
    rm -rf "$snapshots"
    while IFS='|' read -r name required kind filter; do
        if ! run_suite 1 "$name" "$required" "$kind" "$filter"; then
            [[ "$name" == core ]] && die "the core benchmarks failed (output above); nothing regenerated"
            say "warning: suite '$name' failed; it is left out of the report"
        fi
    done <<<"$suites"
    # Later rounds: only the repeated rows, in one criterion run across the suites.
    for (( round = 2; round <= rounds; round++ )); do
        run_suite "$round" repeated "" criterion "$repeat" \
            || say "warning: round $round failed; the report uses the rounds that ran"
    done
    elapsed=$(( $(date +%s) - started ))
    say "all benchmarks ran in ${elapsed} s ($(( elapsed / 60 )) min $(( elapsed % 60 )) s)"
    (( elapsed <= 600 )) || say "warning: over the 10-minute budget; lower REPORT_MEASURE"
else
    [[ -s "$manifest" ]] || die "no previous run recorded in $manifest; run without --no-run first"
    say "--no-run: regenerating from the run recorded in $manifest"
fi

python3 "$script_dir/report.py" --repo "$repo" --manifest "$manifest" \
    || die "report.py failed"
