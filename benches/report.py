#!/usr/bin/env python3
"""Turns one run of benches/report.sh into every table of BENCHMARKS.md and benches/chart.svg.

Standard library only. Reads the run's manifest (<report dir>/runs.tsv: one line per suite,
with its command, status, times, output and records file), its load samples (load.tsv), the
suites' records (records/*.jsonl), callgrind's output files, and the criterion results written
during the run; rewrites each section of BENCHMARKS.md between `<!-- generated:NAME -->` and
`<!-- /generated:NAME -->`, and leaves everything else as it is.
"""

import argparse
import datetime
import json
import re
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import report_criterion as crit
import report_rows as rows_md
from report_chart import chart_svg

Run = namedtuple("Run", "name kind status begin end command out records")
LIMITER_PROFILE = [
    ("limiter_at", "`at(now).check_n`, allowed (time passed in)"),
    ("limiter_at_read", "`at(now).check_n`, allowed, outcome read"),
    ("limiter_at_denied", "`at(now).check_n`, denied"),
    ("limiter_check", "`check()` on `TickClock`, allowed"),
    ("limiter_check_read", "`check()` on `TickClock`, allowed, outcome read"),
    ("governor_check", "governor's `check()` on its default clock"),
    ("governor_check_read", "governor's `check()`, snapshot middleware, outcome read"),
    ("floor_cas", "the bare CAS loop"),
]
COUNTING_PROFILE = [("limiter_at", "`at(now).check_n`, unnamed"),
                    ("limiter_at_named", "`at(now).check_n`, named (counted)")]
CHANGE_PROFILE = [("limiter_at", "allowed, never changed"),
                  ("limiter_at_changed", "allowed, changed once"),
                  ("limiter_at_denied", "denied, never changed"),
                  ("limiter_at_denied_changed", "denied, changed once")]
KEYED_PROFILE = [
    ("new", "`check_key` of `KeyedLimiter::new` (the default table)"),
    ("default", "`check_key`, the table sized for the keys (80% full)"),
    ("at", "`at(now).key(k).check_n` (time passed in), the sized table"),
    ("siphash_at", "the same, SipHash-1-3 fingerprints"),
    ("floor", "floor: SipHash-1-3, then one load and CAS"),
    ("governor", "governor's `check_key` (its TSC read included)"),
]
HTTP_PROFILE = ["bare", "noop_layer", "cellrate", "cellrate_no_headers", "tower_governor",
                "tower_governor_headers", "around_cellrate", "around_cellrate_no_headers",
                "around_tower_governor"]
KEYED_COLUMNS = [(1000, "1,000 keys"), (1000000, "1,000,000 keys")]


def utc(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc)


def cpu():
    """'model x count' from /proc/cpuinfo."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    models = re.findall(r"^model name\s*:\s*(.+)$", info, re.M)
    return f"`{models[0] if models else 'unknown CPU'}` x {len(models)}"


def command_output(args, cwd):
    try:
        return subprocess.run(args, cwd=cwd, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


class Report:
    """One recorded run: its suites, load samples, records and counts."""

    def __init__(self, report_dir, criterion_dir):
        lines = (report_dir / "runs.tsv").read_text().splitlines()
        self.runs = [Run(*line.split("\t")[:8]) for line in lines if line.count("\t") >= 7]
        self.runs = [r._replace(begin=int(r.begin), end=int(r.end)) for r in self.runs]
        if not self.runs:
            sys.exit("report.py: the manifest records no run; rerun benches/report.sh")
        self.quick = any(r.kind == "meta" and r.status == "1" for r in self.runs)
        load = report_dir / "load.tsv"
        self.samples = [line.split("\t") for line in load.read_text().splitlines()] \
            if load.exists() else []
        self.records = {}
        for run in self.runs:
            if run.kind == "plain" and run.status == "ok" and Path(run.records).exists():
                self.records[run.name] = [json.loads(line) for line in
                                          Path(run.records).read_text().splitlines() if line]
        criterion_runs = [r for r in self.runs if r.kind == "criterion" and r.status == "ok"]
        self.criterion = crit.collect_rows(crit.load_results(criterion_dir, criterion_runs))
        self.counts = self.callgrind_counts()

    def run(self, name):
        return next((r for r in self.runs if r.name == name and r.status == "ok"), None)

    def load_range(self, begin, end):
        """'a-b', the 1-minute load average sampled from `begin` to `end`."""
        loads = [float(s[1].split()[0]) for s in self.samples if begin <= int(s[0]) <= end + 5]
        if not loads:
            return "not sampled"
        return f"{min(loads):.2f}-{max(loads):.2f}"

    def context(self, run):
        """The lines above a table: how it was made, on what, under what load."""
        quick = "BENCH_QUICK=1 " if self.quick else ""
        return [f"Command: `{quick}{run.command}`; {cpu()}; load average "
                f"{self.load_range(run.begin, run.end)} during it "
                f"({utc(run.begin):%Y-%m-%d %H:%M}-{utc(run.end):%H:%M} UTC)."]

    def callgrind_counts(self):
        """{(subject, keys or 'http'): (instructions per call, I1 misses per call or None)}."""
        counts = {}
        for run in self.runs:
            found = re.search(r"--callgrind-out-file=(\S+)", run.command)
            if run.kind != "profile" or run.status != "ok" or not found:
                continue
            path = Path(found.group(1))
            if not path.exists():
                continue
            text = path.read_text(errors="replace")
            events = re.search(r"^events: (.+)$", text, re.M).group(1).split()
            totals = [int(v) for v in re.search(r"^totals: (.+)$", text, re.M).group(1).split()]
            totals += [0] * (len(events) - len(totals))
            got = dict(zip(events, totals))
            parts = path.name.split(".")
            if parts[0] == "http":
                calls = int(parts[2])
                counts[(parts[1], "http")] = (got["Ir"] / calls, got.get("I1mr", 0) / calls)
            else:
                counts[(parts[0], int(parts[1]))] = (got["Ir"] / int(parts[2]), None)
        return counts

    def profile_context(self, kind_filter):
        runs = [r for r in self.runs if r.kind == "profile" and kind_filter(r.name)]
        if not runs:
            return None
        example = re.sub(r"--callgrind-out-file=\S+ ", "", runs[0].command)
        example = re.sub(r"\S*/deps/compare-[0-9a-f]+", "target/release/deps/compare-*", example)
        return [f"Counted by callgrind (`{example}` and the like, {len(runs)} runs; {cpu()}): "
                "instruction counts do not depend on the load. Per call of the counted loop, "
                "the loop's own instructions included."]

    def missing(self, *suites):
        names = ", ".join(f"`{s}`" for s in suites)
        return [f"_Not measured in this run: {names} failed or did not run (see the output "
                "of `benches/report.sh`)._"]

    def markdown_section(self, suite):
        """A suite that writes its own markdown lines, after the context line."""
        run, recs = self.run(suite), self.records.get(suite)
        if not run or not recs:
            return self.missing(suite)
        return [*self.context(run), "", *[x["line"] for x in recs if x["kind"] == "markdown"]]

    def rows_section(self, suite, keep=lambda r: True, note=True):
        run, recs = self.run(suite), self.records.get(suite)
        if not run or recs is None:
            return self.missing(suite)
        recs = [r for r in recs if r["kind"] == "row" and keep(r)]
        return [*self.context(run), "", *rows_md.rows_table(recs, note)]

    def profile_rows(self, subjects, columns=((1, "instructions per check"),), context=True):
        """A table of instruction counts, after a blank line (and the context lines)."""
        table = rows_md.profile_table(self.counts, subjects, list(columns))
        lines = self.profile_context(lambda n: not n.startswith("profile http"))
        if not lines or len(table) <= 2:
            return []
        return ["", *(lines + [""] if context else []), *table]


def machine(report, repo):
    lock = (repo / "Cargo.lock").read_text() if (repo / "Cargo.lock").exists() else ""
    versions = ", ".join(
        f"{crate} {m.group(1) if m else '?'}"
        for crate in ("criterion", "governor", "quanta", "tower_governor", "axum", "redis")
        for m in [re.search(rf'name = "{crate}"\nversion = "([^"]+)"', lock)])
    begin, end = report.runs[0].begin, max(r.end for r in report.runs)
    build = report.run("build")
    lines = []
    if report.quick:
        lines += ["**A reduced-size smoke test (`BENCH_QUICK=1`): these figures are not "
                  "measurements. Rerun `bash benches/report.sh` without it.**", ""]
    lines += [f"- CPU: {cpu()} (`nproc`: {command_output(['nproc'], repo)})",
              f"- Toolchain: {command_output(['rustc', '--version'], repo)}; {versions}",
              f"- Run: {utc(begin):%Y-%m-%d %H:%M}-{utc(end):%H:%M} UTC, "
              f"{(end - begin) / 60:.1f} min"
              + (f" (the build {build.end - build.begin} s)" if build else ""),
              f"- Load average (1 min) during the run: {report.load_range(begin, end)}; the "
              "benchmarks themselves keep one or two cores busy"]
    if len(report.samples) >= 2:
        first, last = (list(map(int, s[2].split()[1:])) for s in (report.samples[0],
                                                                   report.samples[-1]))
        delta = [b - a for a, b in zip(first, last)]
        total = sum(delta) or 1
        steal = delta[7] if len(delta) > 7 else 0
        lines.append(f"- CPU time of the whole machine (`/proc/stat`): {100 * (1 - delta[3] / total):.0f}% "
                     f"busy, {100 * steal / total:.1f}% stolen by the hypervisor")
    failed = sorted(r.name for r in report.runs if r.status == "failed")
    if failed:
        lines.append("- Failed, left out: " + ", ".join(f"`{n}`" for n in failed))
    return lines


def sections(report, repo):
    """{section name: markdown lines}."""
    r, counts = report, report.counts
    direct = crit.tables(r.criterion, ["direct"], r.context)
    keyed = crit.tables(r.criterion, ["keyed", "keyed_batch", "keyed_floor", "keyed_parts"],
                        r.context)
    hot = r.records.get("hot_cas")
    http = r.records.get("http")
    redis = r.records.get("redis")
    memory = r.records.get("keyed_memory")
    http_profile = rows_md.http_profile_table(counts, HTTP_PROFILE)
    http_context = r.profile_context(lambda n: n.startswith("profile http"))
    every_row = [rec for recs in r.records.values() for rec in recs if rec["kind"] == "row"]
    losses = crit.losses(r.criterion) + rows_md.losses(every_row)
    losses += [(f"http: {a['name']}", f"adds {a['ratio']:.2f}x tower_governor's time")
               for a in (http or []) if a["kind"] == "added" and a["ratio"] > 1]
    return {
        "machine": machine(report, repo),
        "headline": r.rows_section("paired"),
        "hot_cas": [*r.context(r.run("hot_cas")), "",
                    *rows_md.cas_table([x for x in hot if x["kind"] == "cas"],
                                       [x for x in hot if x["kind"] == "control"])]
        if hot is not None and r.run("hot_cas") else r.missing("hot_cas"),
        "direct": [*direct, "![ns per check](benches/chart.svg)"] if direct
        else r.missing("criterion"),
        "keyed": keyed or r.missing("criterion"),
        "keyed_paired": r.rows_section("keyed_paired", note=False),
        "fingerprints": r.rows_section("keyed_paired", lambda x: "AES-CMAC" in x["name"],
                                       note=False)
        + r.profile_rows([("at", "AES-128-CMAC fingerprints"),
                          ("siphash_at", "SipHash-1-3 fingerprints")], KEYED_COLUMNS),
        "profile": r.profile_rows(LIMITER_PROFILE)
        + r.profile_rows(KEYED_PROFILE, KEYED_COLUMNS, context=False) or r.missing("profile"),
        "memory": [*r.context(r.run("keyed_memory")), "", *rows_md.memory_table(memory)]
        if memory is not None and r.run("keyed_memory") else r.missing("keyed_memory"),
        "counting": r.rows_section("named_paired", note=False)
        + r.profile_rows(COUNTING_PROFILE),
        "quota_changes": r.rows_section("changed_paired", note=False)
        + r.profile_rows(CHANGE_PROFILE),
        "http": [*r.context(r.run("http")), "", *rows_md.http_tables(http), "",
                 "Two threads on one app:", "",
                 *rows_md.rows_table([x for x in http if x["kind"] == "row"], False)]
        + (["", *http_context, "", *http_profile] if http_context else [])
        if http is not None and r.run("http") else r.missing("http"),
        "redis": [*r.context(r.run("redis")), "", *rows_md.redis_tables(redis)]
        if redis else r.missing("redis"),
        "rls": r.markdown_section("rls"),
        "resp": r.markdown_section("resp"),
        "losses": [f"- **{label}**: {text}" for label, text in losses]
        or ["- none in this run"],
    }


def rewrite(doc, generated):
    """Replaces the text between each section's markers, keeping everything else."""
    text = doc.read_text()
    for name in re.findall(r"<!-- generated:(\w+) -->", text):
        if name not in generated:
            sys.exit(f"report.py: {doc} has a section '{name}' that no table fills")
    for name, lines in generated.items():
        begin, end = f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"
        if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
            sys.exit(f"report.py: {doc} must contain {begin} then {end}, once each")
        head, rest = text.split(begin)
        text = f"{head}{begin}\n" + "\n".join(lines) + f"\n{end}{rest.split(end, 1)[1]}"
    doc.write_text(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("--repo", "--report-dir", "--criterion"):
        parser.add_argument(flag, type=Path, required=True)
    args = parser.parse_args()
    report = Report(args.report_dir, args.criterion)
    if report.quick:
        rows_md.MIN_KEPT = 2
    rewrite(args.repo / "BENCHMARKS.md", sections(report, args.repo))
    bars = crit.chart_rows(report.criterion)
    if bars:
        subtitle = f"{cpu().replace('`', '')}, {utc(report.runs[0].begin):%Y-%m-%d}; " \
            "one thread, criterion medians"
        (args.repo / "benches" / "chart.svg").write_text(chart_svg(bars, subtitle))
    print(f"report.py: wrote {args.repo / 'BENCHMARKS.md'}"
          f"{' and benches/chart.svg' if bars else ''}", file=sys.stderr)


if __name__ == "__main__":
    main()
