#!/usr/bin/env python3
"""Turns one run of benches/report.sh into BENCHMARKS.md tables, benches/chart.svg and a summary.

Standard library only. Reads the criterion results (median, ns) that report.sh copied after
each bench run into <manifest dir>/rounds/<round>/**/new/{benchmark,estimates}.json (a benchmark
measured in several rounds counts as the median of its rounds' medians), the output of plain
harness = false bench binaries, and the machine's description; rewrites only the part of
BENCHMARKS.md between the generated markers, and prints three summary lines.

A criterion id is split into a subject (cellrate[_variant], mutex_bucket, governor, floor_*, or
any other name, which gets its own column) and a row (the group and the id's other parts).
"""

import argparse
import datetime
import json
import math
import re
import statistics
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

from report_chart import COLORS, chart_svg, sig3

BEGIN, END = "<!-- generated:begin -->", "<!-- generated:end -->"
COLUMNS = ("cellrate", "mutex_bucket", "governor", "floor")
HEAD = {column: column.replace("_", " ") for column in COLUMNS}
REPEATED = " †"  # marks a figure that is the median of several rounds
SCENARIO = {"direct/allowed_at": "allowed, time passed in",
            "direct/denied_at": "denied, time passed in",
            "direct/allowed_clock": "allowed, real clock",
            "direct/denied_clock": "denied, real clock"}
TABLE_TITLE = {"direct": "direct: one limiter, one thread",
               "contention": "contention: threads sharing one limiter",
               "keyed": "keyed: one thread, every key known, visited in random order",
               "keyed_batch": "keyed batches: 64 keys per iteration, one thread, real clocks",
               "keyed_floor": "keyed floor: per check a clock read, then a load and a CAS of a "
                              "random slot of a 1,250,000-slot array (20 MB), no hash, no search; "
                              "siphash then cas64: the keys of the keyed rows, the slot picked "
                              "by the key's SipHash in an array of keys x 5/4 slots (cellrate's "
                              "table for that many keys), then a load and a CAS, time passed in"}
UNIT = {"contention|keyed_throughput_.*": "thread",
        r"keyed_check_\d+_keys|keyed_batch|keyed_floor": "u64 key",
        r"keyed_check_\d+_string_keys": "String key"}  # what a number counts, by group regex
FLOOR = {"cas": "bare CAS", "load": "bare load", "clock_read": "Instant::now",
         "quanta_read": "quanta read"}
VARIANT = {"quanta": "cellrate on QuantaClock", "at_now": "cellrate, time passed in",
           "huge_pages": "cellrate, time passed in, table in 2 MiB pages (huge_pages(true))",
           "siphash_at_now": "cellrate, time passed in, SipHash-1-3 fingerprints",
           "cached": "both on a clock refreshed every 1 ms (CachedClock, QuantaUpkeepClock)",
           "batch": "cellrate check_keys_n (one call per 64 keys)"}

Run = namedtuple("Run", "name kind status begin end command out round")
# ns: the median of the criterion medians in `rounds`, ((round, ns), ...) in round order.
Result = namedtuple("Result", "group parts name column variant ns elements run rounds")


def read_runs(manifest):
    """The suite runs of the last report, as report.sh recorded them (tab-separated)."""
    rows = [line.split("\t") for line in Path(manifest).read_text().splitlines()]
    if any(len(row) != len(Run._fields) for row in rows):
        sys.exit(f"report.py: {manifest} was written by an older report.sh (no rounds); "
                 "rerun benches/report.sh without --no-run")
    return [Run(n, k, s, int(b), int(e), c, o, int(r)) for n, k, s, b, e, c, o, r in rows]


def classify(name):
    """(column, variant) of a subject name; column None for subjects outside COLUMNS."""
    for column in ("cellrate", "mutex_bucket", "governor"):
        if name == column or name.startswith(column + "_"):
            return column, name[len(column) + 1:]
    return ("floor", name[len("floor_"):]) if name.startswith("floor_") else (None, "")


def load_results(snapshots, runs):
    """Every criterion result of the runs, from report.sh's per-round snapshots; a benchmark
    measured in several rounds is one result, the median of its rounds' medians."""
    measured = {}
    for meta_path in sorted(snapshots.glob("*/**/new/benchmark.json")):
        round_no = int(meta_path.relative_to(snapshots).parts[0])
        estimates = meta_path.with_name("estimates.json")
        mtime = estimates.stat().st_mtime if estimates.exists() else -1
        run = next((r for r in runs if r.kind == "criterion" and r.round == round_no
                    and r.status == "ok" and r.begin <= mtime <= r.end), None)
        if run is None:
            continue  # incomplete, or not from the recorded run
        meta = json.loads(meta_path.read_text())
        ns = json.loads(estimates.read_text())["median"]["point_estimate"]
        key = (meta["group_id"], meta.get("function_id"), meta.get("value_str"))
        measured.setdefault(key, (meta, []))[1].append((round_no, ns, run))
    results = []
    for (group, function_id, value_str), (meta, rounds) in measured.items():
        rounds.sort(key=lambda r: r[0])
        parts = (function_id or "value").split("/")
        known = [i for i, p in enumerate(parts) if classify(p)[0]]
        name = parts.pop(known[0] if known else -1)  # unknown subjects: the function's last part
        parts += [value_str] if value_str else []
        results.append(Result(group, tuple(parts), name, *classify(name),
                              statistics.median(ns for _, ns, _ in rounds),
                              (meta.get("throughput") or {}).get("Elements"), rounds[0][2],
                              tuple((r, ns) for r, ns, _ in rounds)))
    return results


def collect_rows(results):
    """{(group, parts, variant): {column or subject name: Result}}; a cellrate variant gets its
    own row, which shows the same mutex bucket and governor measurements as the plain row."""
    variants = {}
    for r in results:
        if r.column in ("cellrate", "mutex_bucket", "governor") and r.variant:
            variants.setdefault((r.group, r.parts), set()).add(r.variant)
    rows = {}
    for r in results:
        variant = r.variant
        if r.column == "floor":  # floor_quanta_read belongs to the quanta row
            own = variants.get((r.group, r.parts), ())
            variant = next((v for v in sorted(own) if r.variant.startswith(v)), "")
        rows.setdefault((r.group, r.parts, variant), {})[r.column or r.name] = r
    for (group, parts, variant), row in rows.items():
        base = rows.get((group, parts, ""), {}) if variant else {}
        row.update({c: base[c] for c in ("mutex_bucket", "governor") if c in base.keys() - row})
    return rows


def table_of(group):
    """The table a group's rows go in: its part before any '/'; keyed_check_* share one."""
    return "keyed" if group.startswith("keyed_check_") else group.split("/")[0]


def row_order(key):
    """Known scenarios first in SCENARIO's order, then by table; numbers sort numerically."""
    group, parts, variant = key
    rank = list(SCENARIO).index(group) if group in SCENARIO else len(SCENARIO)
    natural = [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts]
    return (rank, table_of(group), natural, group, variant)


def row_label(group, parts, variant):
    words = [SCENARIO.get(group, group.split("/", 1)[1].replace("_", " "))] if "/" in group else []
    unit = next((u for g, u in UNIT.items() if re.fullmatch(g, group)), "")
    for part in parts:
        if part.isdigit():
            words.append(f"{int(part):,} {unit}{'s' if unit and int(part) != 1 else ''}".strip())
        else:
            words.append(part.replace("_", " "))
    if variant:
        words.append(VARIANT.get(variant, "cellrate_" + variant))
    return ", ".join(words) or group


def per_second(r):
    return (r.elements or 1) / r.ns * 1e9


def amount(r, rate):
    """A result in M decisions/s (`rate`) or in ns, to 3 significant digits; n/a if missing."""
    return "n/a" if r is None else sig3(per_second(r) / 1e6 if rate else r.ns)


def ratio(mine, other, rate):
    """`mine` over `other`: throughput ratio if `rate`, else time ratio; n/a if missing. For
    two results measured in the same rounds, the median of the rounds' ratios: the two were
    measured seconds apart within a round, but minutes apart across rounds."""
    if mine is None or other is None:
        return "n/a"
    pairs = same_rounds(mine, other)
    if len(pairs) > 1:
        return f"{statistics.median(t / m if rate else m / t for m, t in pairs):.2f}"
    return f"{per_second(mine) / per_second(other) if rate else mine.ns / other.ns:.2f}"


def same_rounds(mine, other):
    """[(mine ns, other ns)] of the rounds that measured both, paired by round number."""
    theirs = dict(other.rounds)
    return [(ns, theirs[r]) for r, ns in mine.rounds if r in theirs]


def floor_name(r):
    return FLOOR.get(r.variant, r.variant.replace("_", " "))


def table_md(prefix, keyed):
    """One markdown table for the rows `keyed` [(key, row)] whose groups start with `prefix`."""
    results = [r for _, row in keyed for r in row.values()]
    rate = any(r.elements for r in results)
    extra = sorted({k for _, row in keyed for k in row if k not in COLUMNS})
    note = ("Decisions (criterion throughput elements) per second from the median time, all "
            "threads together; ratios are cellrate's throughput over the other's: above 1 = "
            "cellrate faster." if rate else "Median ns per check; ratios are cellrate's time "
            "over the other's: below 1 = cellrate faster.")
    head = ["scenario", *(HEAD[c] for c in COLUMNS), *extra, "cellrate/governor", "cellrate/mutex"]
    lines = [f"### {TABLE_TITLE.get(prefix, prefix.replace('_', ' '))}", "",
             *(f"Command: `{c}`" for c in sorted({r.run.command for r in results})), "",
             note, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, row in keyed:
        cells = [row_label(*key)]
        for column in (*COLUMNS, *extra):
            r = row.get(column)
            text = f"{amount(r, rate)} {'M/s' if rate else 'ns'}{REPEATED * (len(r.rounds) > 1)}" \
                if r else ""
            cells.append(f"{text} ({floor_name(r)})" if column == "floor" and r else text)
        mine = row.get("cellrate")
        cells += [ratio(mine, row.get(c), rate) for c in ("governor", "mutex_bucket")]
        lines.append("| " + " | ".join(cells) + " |")
    if any(len(r.rounds) > 1 for r in results):
        lines += ["", f"{REPEATED} the median of the rounds' medians; a ratio of two such figures "
                  "is the median of the rounds' ratios (see *Rounds*)."]
    return "\n".join(lines)


def rounds_md(rows, keys):
    """The rows measured in more than one round: each round's figures and ratio against
    governor on its default clock, so that the spread of a ratio shows next to the median the
    tables use."""
    lines = []
    for key in keys:
        group, parts, _ = key
        mine = rows[key].get("cellrate")
        theirs = rows.get((group, parts, ""), {}).get("governor")
        if not mine or not theirs or len(mine.rounds) < 2:
            continue
        rate = bool(mine.elements)

        def each(r):
            return ", ".join(f"{sig3(((r.elements or 1) / ns * 1e3) if rate else ns)} (#{n})"
                             for n, ns in r.rounds)

        pairs = same_rounds(mine, theirs)
        ratios = ", ".join(f"{(t / m if rate else m / t):.2f}" for m, t in pairs)
        unit = "M/s" if rate else "ns"
        of_medians = mine.ns / theirs.ns if not rate else theirs.ns / mine.ns
        # Here governor is always on its default clock, the cached row included.
        label = row_label(*key).replace(VARIANT["cached"], "cellrate on CachedClock")
        lines.append(f"| {label} | {each(mine)} {unit} | {each(theirs)} {unit} | "
                     f"{ratios} | {ratio(mine, theirs, rate)} | {of_medians:.2f} |")
    if not lines:
        return []
    return ["### Rounds", "",
            "The headline rows were measured in every round (`REPORT_ROUNDS`); "
            "round 1 is the full run, later rounds rerun only these rows, minutes apart. The "
            "tables above show the median of the rounds' medians for each figure and, for the "
            "ratio of two repeated figures, the median of the rounds' ratios (the two were "
            "measured seconds apart in each round). cellrate/governor: time ratio for ns (below "
            "1 = cellrate faster), throughput ratio for M/s (above 1).", "",
            "| row | cellrate, per round | governor (default clock), per round | "
            "cellrate/governor, per round | median of the ratios | ratio of the medians |",
            "|---|---|---|---|---|---|", *lines, ""]


def chart_rows(rows):
    """(label, {column: ns}, floor ns or None) per row; throughput rows in ns per decision
    (the wall time of all threads over their decisions)."""
    out = []
    for key in sorted(rows, key=row_order):
        ns = {c: r.ns / (r.elements or 1) for c, r in rows[key].items() if c in COLUMNS}
        prefix = table_of(key[0]).replace("_", " ")
        label = row_label(*key) if prefix == "direct" else f"{prefix}: {row_label(*key)}"
        if any(c in ns for c in COLORS):
            out.append((label, ns, ns.get("floor")))
    return out


def command_output(args, cwd):
    try:
        return subprocess.run(args, cwd=cwd, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu():
    """'model x count' from /proc/cpuinfo."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    models = re.findall(r"^model name\s*:\s*(.+)$", info, re.M)
    return f"{models[0] if models else 'unknown CPU'} x {len(models)}"


def machine(repo, when):
    """Markdown lines describing the machine, the toolchain and the compared versions."""
    lock = (repo / "Cargo.lock").read_text() if (repo / "Cargo.lock").exists() else ""
    versions = ", ".join(
        f"{crate} {m.group(1) if m else '?'}" for crate in ("criterion", "governor", "quanta")
        for m in [re.search(rf'name = "{crate}"\nversion = "([^"]+)"', lock)])
    return [f"- CPU: {cpu()} (`nproc`: {command_output(['nproc'], repo)})",
            f"- Toolchain: {command_output(['rustc', '--version'], repo)}; {versions}",
            f"- Run: {when:%Y-%m-%d %H:%M} UTC"]


def summary(rows):
    """Three lines for the README: time passed in, real clock, 2 threads; cellrate/other in
    brackets (time ratios for ns, throughput ratios for M decisions/s)."""
    def get(group, column, parts=(), variant=""):
        return rows.get((group, parts, variant), {}).get(column)

    def vs(group, parts=(), columns=("governor", "mutex_bucket"), rate=False):
        mine = get(group, "cellrate", parts)
        others = [(get(group, c, parts), c) for c in columns]
        return f"cellrate {amount(mine, rate)} vs " + ", ".join(
            f"{floor_name(o) if c == 'floor' and o else HEAD[c].split()[0]} "
            f"{amount(o, rate)} ({ratio(mine, o, rate)})" for o, c in others)

    def clock(group):
        std, tsc = get(group, "cellrate"), get(group, "cellrate", (), "quanta")
        gov = get(group, "governor")
        cached, gov_cached = (get(group, c, (), "cached") for c in ("cellrate", "governor"))
        return (f"cellrate {amount(std, False)} on Instant, {amount(tsc, False)} on QuantaClock "
                f"vs governor {amount(gov, False)} ({ratio(std, gov, False)}, "
                f"{ratio(tsc, gov, False)}); on clocks refreshed every 1 ms cellrate "
                f"{amount(cached, False)} vs governor {amount(gov_cached, False)} "
                f"({ratio(cached, gov_cached, False)})")

    floor = ("governor", "mutex_bucket", "floor")
    one = get("contention", "cellrate", ("allowed", "1"))
    return [f"Time passed in (ns/check): allowed {vs('direct/allowed_at', columns=floor)}; "
            f"denied {vs('direct/denied_at', columns=floor)}.",
            f"Real clock (ns/check): allowed {clock('direct/allowed_clock')}; denied "
            f"{clock('direct/denied_clock')}.",
            f"2 threads on one limiter (M decisions/s): allowed "
            f"{vs('contention', ('allowed', '2'), rate=True)}, 1 thread {amount(one, True)}; "
            f"denied {vs('contention', ('denied', '2'), rate=True)}."]


def generated(rows, runs, lines, repo, when):
    """The text between the markers."""
    out = ["_Generated by `benches/report.sh`; edits here are overwritten._", "",
           "### Machine", "", *machine(repo, when), "", "### Summary", "",
           "cellrate/other in brackets: below 1 = cellrate faster for ns, above 1 for M/s.", "",
           *(f"- {line}" for line in lines), "", "![ns per check](benches/chart.svg)", ""]
    keys = sorted(rows, key=row_order)
    prefixes = sorted({table_of(k[0]) for k in keys}, key=lambda p: (p != "direct", p))
    for prefix in prefixes:
        out += [table_md(prefix, [(k, rows[k]) for k in keys if table_of(k[0]) == prefix]), ""]
    out += rounds_md(rows, keys)
    for run in runs:
        if run.kind == "plain" and run.status == "ok":
            text = Path(run.out).read_text().strip() if Path(run.out).exists() else ""
            out += [f"### {run.name}", "", f"Command: `{run.command}`", "", "```",
                    text or "(no output)", "```", ""]
    failed = sorted({f"`{r.name}` (round {r.round})" for r in runs if r.status != "ok"})
    if failed:
        out += [f"Not in this run (failed or could not run here): {', '.join(failed)}.", ""]
    return "\n".join(out)


def rewrite(doc, body):
    """Replaces the text between the markers of `doc`, keeping everything else."""
    text = doc.read_text() if doc.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        sys.exit(f"report.py: {doc} must contain {BEGIN} then {END}, once each")
    head, rest = text.split(BEGIN)
    doc.write_text(f"{head}{BEGIN}\n{body}\n{END}{rest.split(END)[1]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("--repo", "--manifest"):
        parser.add_argument(flag, type=Path, required=True)
    args = parser.parse_args()
    runs = read_runs(args.manifest)
    results = load_results(args.manifest.parent / "rounds", runs)
    if not results:
        sys.exit("report.py: no criterion results from the recorded run were found")
    rows = collect_rows(results)
    lines = summary(rows)
    when = datetime.datetime.fromtimestamp(min(r.begin for r in runs), datetime.timezone.utc)
    rewrite(args.repo / "BENCHMARKS.md", generated(rows, runs, lines, args.repo, when))
    bars = chart_rows(rows)
    if bars:
        subtitle = f"{cpu()}, {when:%Y-%m-%d}; throughput rows (contention, keyed): " \
            "wall-clock ns per decision, all threads together"
        (args.repo / "benches" / "chart.svg").write_text(chart_svg(bars, subtitle))
    print(f"report.py: wrote {args.repo / 'BENCHMARKS.md'}"
          f"{' and benches/chart.svg' if bars else ' (nothing to chart)'} from "
          f"{len(results)} results", file=sys.stderr)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
