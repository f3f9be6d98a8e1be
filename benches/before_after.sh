#!/usr/bin/env bash
# The headline rows (suite `paired`) of an earlier revision beside this tree's, taking turns:
# each revision's bench binary runs the suite in turn, ROUNDS times, on the same machine under
# the same load. A row's figure is its own ratio to governor in the same process (cellrate's
# time per check over governor's, or governor's rate over cellrate's for rate rows), so that the
# load a round ran under divides out; the table gives, per row, that ratio before and after and
# their quotient (below 1.00 is faster after).
# Both binaries run their own tree's bench code: where the subjects' code changed between the
# revisions (the call that replaced another), compare like with like (the same black_box on the
# time passed in, say) by editing the earlier tree, kept in target/before_after/tree.
#
# Usage: benches/before_after.sh REV [ROWS]     (works from any directory)
#   REV    the earlier revision (a commit, tag or branch)
#   ROWS   optional: only the rows whose names contain one of these |-separated parts
# Environment: ROUNDS=3 (turns of each revision), BENCH_QUICK=1 (smoke test, no measurement).
set -euo pipefail

die() { echo "before_after.sh: error: $*" >&2; exit 1; }
[[ $# -ge 1 ]] || die "usage: benches/before_after.sh REV [ROWS]"
rev=$1
rows=${2:-}
rounds=${ROUNDS:-3}

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$script_dir/.." && pwd)
cd "$repo"
git rev-parse --verify --quiet "$rev^{commit}" >/dev/null || die "no revision '$rev'"

target_dir=$(cargo metadata --no-deps --format-version 1 \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
work="$target_dir/before_after"
before_tree="$work/tree"
mkdir -p "$work"

# The bench binary of the tree at `$1`, built in that tree's own target directory.
bench_binary() {
    (cd "$1" && cargo bench -p cellrate-benches --no-run --message-format=json 2>/dev/null) \
        | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") \
            and m["target"]["name"] == "compare":
        print(m["executable"])'
}

if [[ -d $before_tree ]]; then
    git -C "$before_tree" checkout --quiet --detach "$rev"
else
    git worktree add --quiet --detach "$before_tree" "$rev"
fi
echo "before_after.sh: building $rev and this tree" >&2
before=$(bench_binary "$before_tree")
after=$(bench_binary "$repo")
[[ -x $before && -x $after ]] || die "a bench binary did not build"

rm -f "$work"/before.*.jsonl "$work"/after.*.jsonl
for round in $(seq 1 "$rounds"); do
    for side in before after; do
        bin=$before
        [[ $side == after ]] && bin=$after
        echo "before_after.sh: round $round of $rounds, $side" >&2
        PAIRED_ROWS="$rows" BENCH_RECORDS="$work/$side.$round.jsonl" "$bin" paired >/dev/null
    done
done

python3 - "$work" "$rev" "$rounds" <<'EOF'
import glob, json, statistics, sys

work, rev, rounds = sys.argv[1], sys.argv[2], sys.argv[3]

def ratios(side):
    by_row = {}
    for path in glob.glob(f"{work}/{side}.*.jsonl"):
        for line in open(path):
            r = json.loads(line)
            if r.get("kind") != "row" or r["subjects"][1] != "governor":
                continue
            if r["ratio"][1] is not None:  # null: no turn of the row was kept
                # A rate row's ratio is cellrate's rate over governor's: inverted, every
                # figure is a cost relative to governor's, below 1 faster.
                ratio = r["ratio"][1] if r["unit"] == "time" else 1 / r["ratio"][1]
                by_row.setdefault(r["name"], []).append(ratio)
    return by_row

before, after = ratios("before"), ratios("after")
print(f"Paired rows, {rev} (before) and this tree (after), {rounds} turns each; figure: cost "
      "relative to governor in the same process (time over governor's; governor's rate over "
      "cellrate's for rate rows), median of the turns; after / before below 1: faster after")
print()
print("| row | before | after | after / before |")
print("|---|---|---|---|")
for name in sorted(set(before) & set(after)):
    b, a = statistics.median(before[name]), statistics.median(after[name])
    print(f"| {name} | {b:.2f}x | {a:.2f}x | {a / b:.2f} |")
for name in sorted(set(before) ^ set(after)):
    print(f"| {name} | {'-' if name not in before else 'only before'} | "
          f"{'-' if name not in after else 'only after'} | |")
EOF
