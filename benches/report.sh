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
#   REPORT_FEATURES=quanta  cargo features for every bench target (plus each one's required ones)
#
# Every bench target cargo knows (benches/*.rs and any declared [[bench]]) is run, `core` first.
# `core` must succeed; every other target is optional: if it fails (a missing feature, no Redis
# server, ...) it is reported and skipped. Criterion targets get short CLI settings; other
# harness = false binaries (e.g. `keyed_memory`) run as they are and their output is kept.
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
    -h|--help) sed -n '2,16s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
esac

command -v cargo >/dev/null || die "cargo not found on PATH"
command -v python3 >/dev/null || die "python3 not found on PATH (report.py needs Python 3)"
[[ -f Cargo.toml ]] || die "no Cargo.toml in $repo"

warm_up=${REPORT_WARM_UP:-1}
measure=${REPORT_MEASURE:-2}
features=${REPORT_FEATURES:-quanta}

# Bench targets of this package, one per line: name|required features (comma-separated)|source
# path (`|`, not a tab: `read` would merge the tabs around an empty field). `core` first.
list_targets() {
    cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
meta = json.load(sys.stdin)
root = sys.argv[1] + "/Cargo.toml"
rows = [(t["name"], ",".join(t.get("required-features") or []), t["src_path"])
        for p in meta["packages"] if p["manifest_path"] == root
        for t in p["targets"] if "bench" in t["kind"]]
for name, req, src in sorted(rows, key=lambda r: (r[0] != "core", r[0])):
    print(f"{name}|{req}|{src}")
print("TARGET_DIR||" + meta["target_directory"])
' "$repo"
}

listing=$(list_targets) || die "cargo metadata failed"
target_dir=$(awk -F'|' '$1 == "TARGET_DIR" { print $3 }' <<<"$listing")
[[ -n "$target_dir" ]] || die "could not find cargo's target directory"
report_dir="$target_dir/report"
manifest="$report_dir/runs.tsv"
mkdir -p "$report_dir"

if (( run_benches )); then
    grep -q "^core|" <<<"$listing" || die "no bench target 'core' (expected benches/core.rs)"
    for file in benches/*.rs; do
        name=$(basename "$file" .rs)
        grep -q "^$name|" <<<"$listing" || say "note: $file is not a bench target cargo knows; skipped"
    done
    started=$(date +%s)
    : >"$manifest"
    while IFS='|' read -r name required src; do
        feats=$features
        [[ -n "$required" ]] && feats="$feats,$required"
        if grep -q 'criterion_main!' "$src"; then
            kind=criterion
            cmd=(cargo bench --features "$feats" --bench "$name" --
                 --warm-up-time "$warm_up" --measurement-time "$measure" --noplot)
        else
            kind=plain
            cmd=(cargo bench --features "$feats" --bench "$name")
        fi
        out="$report_dir/$name.out"
        say "=== $name ($kind): ${cmd[*]}"
        begin=$(date +%s)
        if "${cmd[@]}" </dev/null | tee "$out"; then
            status=ok
        else
            status=failed
            [[ "$name" == core ]] && die "the core benchmarks failed (output above); nothing regenerated"
            say "warning: bench target '$name' failed; it is left out of the report"
        fi
        end=$(( $(date +%s) + 1 ))
        say "=== $name: $status in $(( end - 1 - begin )) s"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
            "$name" "$kind" "$status" "$begin" "$end" "${cmd[*]}" "$out" >>"$manifest"
    done < <(grep -v '^TARGET_DIR|' <<<"$listing")
    elapsed=$(( $(date +%s) - started ))
    say "all benchmarks ran in ${elapsed} s ($(( elapsed / 60 )) min $(( elapsed % 60 )) s)"
    (( elapsed <= 600 )) || say "warning: over the 10-minute budget; lower REPORT_MEASURE"
else
    [[ -s "$manifest" ]] || die "no previous run recorded in $manifest; run without --no-run first"
    say "--no-run: regenerating from the run recorded in $manifest"
fi

python3 "$script_dir/report.py" --repo "$repo" --target-dir "$target_dir" --manifest "$manifest" \
    || die "report.py failed"
