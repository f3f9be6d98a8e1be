#!/usr/bin/env bash
# Runs every benchmark suite once and regenerates every table of BENCHMARKS.md (and
# benches/chart.svg) from that one run (benches/report.py).
#
# Usage: benches/report.sh [--no-run]     (works from any directory)
#   --no-run   skip the benchmarks; regenerate from the results of the last run of this script.
# Environment:
#   BENCH_QUICK=1         smoke test: every suite in a reduced size, in about 3 minutes. The
#                         tables it writes are marked as not measurements; do not commit them.
#   REPORT_WARM_UP=1      criterion warm-up seconds per benchmark (0.2 with BENCH_QUICK=1)
#   REPORT_MEASURE=2      criterion measurement seconds per benchmark (0.3 with BENCH_QUICK=1)
#   REPORT_FEATURES=quanta,http,redis  cargo features of cellrate-benches, one build for all
#   REPORT_SUITES=regex   run only the suites whose names match (`profile`: the callgrind
#                         counts); the report then leaves the others out
#
# Order: one build; the criterion suites `direct` and `keyed` (run `criterion`); the plain suites (`paired`,
# `hot_cas`, `keyed_paired`, `named_paired`, `changed_paired`, `keyed_memory`, `http`, `redis`),
# then `rls` (cellrate-server over gRPC, crates/cellrate-server/benches/rls_load.rs) and `resp`
# (CL.THROTTLE under redis-benchmark beside throttlecrab-server and Redis, resp_load.rs there),
# each writing its results as JSON lines (BENCH_RECORDS); then, where valgrind is installed,
# callgrind's instruction counts of `profile` loops and of HTTP requests (these do not depend
# on the load). A suite that fails (no redis-server, ...) is reported and left out. Every ~5 s
# the load average and /proc/stat are sampled, so that each table can say what load it ran
# under.
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
    -h|--help) sed -n '2,24s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
esac

command -v cargo >/dev/null || die "cargo not found on PATH"
command -v python3 >/dev/null || die "python3 not found on PATH (report.py needs Python 3)"
[[ -f Cargo.toml ]] || die "no Cargo.toml in $repo"

quick=${BENCH_QUICK:-0}
if [[ $quick == 1 ]]; then
    warm_up=${REPORT_WARM_UP:-0.2}
    measure=${REPORT_MEASURE:-0.3}
else
    warm_up=${REPORT_WARM_UP:-1}
    measure=${REPORT_MEASURE:-2}
fi
features=${REPORT_FEATURES:-quanta,http,redis}
only=${REPORT_SUITES:-.}

target_dir=$(cargo metadata --no-deps --format-version 1 \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])') \
    || die "cargo metadata failed"
[[ -n "$target_dir" ]] || die "could not find cargo's target directory"
report_dir="$target_dir/report"
manifest="$report_dir/runs.tsv"
records="$report_dir/records"
profiles="$report_dir/callgrind"
mkdir -p "$report_dir"

# Appends one line to the manifest: name, kind, status, begin, end, command, output, records.
record_run() {
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$manifest"
}

# Runs `$@` as suite `$name` of kind `$kind`, its output in `$out`, its records in `$rec`;
# returns non-zero if it failed.
run_suite() {
    local name=$1 kind=$2 out=$3 rec=$4 begin status
    shift 4
    say "=== $name: $*"
    begin=$(date +%s)
    if [[ $kind == profile ]]; then
        if BENCH_RECORDS="$rec" "$@" </dev/null >"$out" 2>&1; then status=ok; else status=failed; fi
    elif BENCH_RECORDS="$rec" "$@" </dev/null 2>&1 | tee "$out"; then
        status=ok
    else
        status=failed
    fi
    say "=== $name: $status in $(( $(date +%s) - begin )) s"
    record_run "$name" "$kind" "$status" "$begin" "$(( $(date +%s) + 1 ))" "$*" "$out" "$rec"
    [[ $status == ok ]]
}

# Samples the load average and the CPU counters into `$1` every 5 s until killed.
sample_load() {
    while :; do
        printf '%s\t%s\t%s\n' "$(date +%s)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
            "$(head -1 /proc/stat)" >>"$1"
        sleep 5
    done
}

if (( run_benches )); then
    started=$(date +%s)
    : >"$manifest"
    rm -rf "$records" "$profiles"
    mkdir -p "$records" "$profiles"
    : >"$report_dir/load.tsv"
    sample_load "$report_dir/load.tsv" &
    sampler=$!
    trap 'kill "$sampler" 2>/dev/null || true' EXIT
    record_run quick meta "$quick" "$started" "$started" "BENCH_QUICK=$quick" - -

    cargo=(cargo bench -p cellrate-benches --features "$features")
    run_suite build build "$report_dir/build.out" - "${cargo[@]}" --no-run \
        || die "the bench binary did not build (output in $report_dir/build.out)"
    bin=$("${cargo[@]}" --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") \
            and m["target"]["name"] == "compare":
        print(m["executable"])') || die "could not find the bench binary"

    export BENCH_QUICK=$quick
    # One process for both criterion suites: each builds its subjects whatever the filter.
    if [[ criterion =~ $only ]]; then
        run_suite criterion criterion "$report_dir/criterion.out" - "${cargo[@]}" -- \
            --warm-up-time "$warm_up" --measurement-time "$measure" --noplot '^(direct/|keyed_)' \
            || say "warning: the criterion suites failed; they are left out of the report"
    fi
    for suite in paired hot_cas keyed_paired named_paired changed_paired keyed_memory http redis
    do
        [[ $suite =~ $only ]] || continue
        run_suite "$suite" plain "$report_dir/$suite.out" "$records/$suite.jsonl" \
            "${cargo[@]}" -- "$suite" \
            || say "warning: suite '$suite' failed; it is left out of the report"
    done

    # cellrate-server over gRPC beside a floor: a bench target of its own crate.
    if [[ rls =~ $only ]]; then
        run_suite rls plain "$report_dir/rls.out" "$records/rls.jsonl" \
            cargo bench -p cellrate-server --bench rls_load \
            || say "warning: suite 'rls' failed; it is left out of the report"
    fi

    # RESP beside its peers: a bench target of the server's crate. throttlecrab-server is built
    # once into a cache directory (its build needs protoc: Debian's protobuf-compiler, installed
    # here if missing); if it cannot be had, its rows are left out and the others still run.
    if [[ resp =~ $only ]]; then
        cache="${CELLRATE_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cellrate-bench}"
        crab="$cache/throttlecrab/bin/throttlecrab-server"
        if [[ ! -x $crab ]]; then
            if ! command -v protoc >/dev/null && command -v apt-get >/dev/null; then
                say "installing protobuf-compiler (throttlecrab-server's build needs protoc)"
                { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
                    protobuf-compiler; } >"$report_dir/protoc.out" 2>&1 || true
            fi
            say "building throttlecrab-server into $cache (once)"
            cargo install --locked --root "$cache/throttlecrab" throttlecrab-server \
                >"$report_dir/throttlecrab.out" 2>&1 \
                || say "warning: throttlecrab-server did not build (see $report_dir/throttlecrab.out); its rows are left out"
        fi
        if [[ -x $crab ]]; then export THROTTLECRAB_SERVER=$crab; fi
        run_suite resp plain "$report_dir/resp.out" "$records/resp.jsonl" \
            cargo bench -p cellrate-server --bench resp_load \
            || say "warning: suite 'resp' failed; it is left out of the report"
    fi

    if [[ profile =~ $only ]] && command -v valgrind >/dev/null; then
        checks=$([[ $quick == 1 ]] && echo 20000 || echo 200000)
        requests=$([[ $quick == 1 ]] && echo 2000 || echo 20000)
        callgrind=(valgrind --tool=callgrind --toggle-collect='*profiled_count*')
        for subject in limiter_at limiter_at_read limiter_at_denied limiter_at_changed \
            limiter_at_denied_changed limiter_at_named limiter_check limiter_check_read \
            governor_check governor_check_read floor_cas; do
            run_suite "profile $subject" profile "$profiles/$subject.log" - \
                "${callgrind[@]}" --callgrind-out-file="$profiles/$subject.1.$checks.out" \
                "$bin" profile "$subject" 1 "$checks" || true
        done
        for keys in 1000 1000000; do
            for subject in new default at siphash_at floor governor; do
                run_suite "profile $subject $keys" profile "$profiles/$subject.$keys.log" - \
                    "${callgrind[@]}" \
                    --callgrind-out-file="$profiles/$subject.$keys.$checks.out" \
                    "$bin" profile "$subject" "$keys" "$checks" || true
            done
        done
        for subject in bare noop_layer cellrate cellrate_no_headers tower_governor \
            tower_governor_headers around_cellrate around_cellrate_no_headers \
            around_tower_governor; do
            run_suite "profile http $subject" profile "$profiles/http.$subject.log" - \
                env HTTP_BENCH_ONLY="$subject" HTTP_BENCH_REQUESTS="$requests" \
                valgrind --tool=callgrind --cache-sim=yes \
                --toggle-collect='*profiled_requests*' \
                --callgrind-out-file="$profiles/http.$subject.$requests.out" "$bin" http \
                || true
        done
    elif [[ profile =~ $only ]]; then
        say "warning: no valgrind on PATH; the instruction counts are left out of the report"
    fi

    kill "$sampler" 2>/dev/null || true
    elapsed=$(( $(date +%s) - started ))
    say "all benchmarks ran in ${elapsed} s ($(( elapsed / 60 )) min $(( elapsed % 60 )) s)"
    (( elapsed <= 900 )) || say "warning: over the 15-minute budget"
else
    [[ -s "$manifest" ]] || die "no previous run recorded in $manifest; run without --no-run first"
    say "--no-run: regenerating from the run recorded in $manifest"
fi

python3 "$script_dir/report.py" --repo "$repo" --report-dir "$report_dir" \
    --criterion "$target_dir/criterion" || die "report.py failed"
