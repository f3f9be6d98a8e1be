"""Markdown tables of the plain suites' records and of callgrind's counts, for benches/report.py.

Standard library only. A record is one JSON object a suite wrote (benches/record.rs); a
paired row's record carries its ratios (p25, p50, p75), bounds, kept and dropped turns, and
each subject's median ns per operation.
"""

import math

from report_chart import sig3

COMPETITORS = {"governor", "tower_governor", "mutex"}

# The fewest kept turns a verdict is drawn from (report.py sets 2 for a reduced-size run), as
# benches/paired/row.rs's `min_kept`.
MIN_KEPT = 10


def fmt(v, digits=2):
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def spread(q):
    """`p50 (p25-p75)` of a [p25, p50, p75] list."""
    if not q or q[1] is None:
        return "n/a"
    return f"{q[1]:.2f} ({fmt(q[0])}-{fmt(q[2])})"


def verdict(r, met):
    """The row's `met` flag, or None where too few turns were kept to judge."""
    return None if r["kept"] < MIN_KEPT else met


def bound_cell(unit, bound, met, kept=MIN_KEPT):
    if bound is None:
        return ""
    sign = "<=" if unit == "time" else ">="
    verdict = f"too few turns kept ({int(kept)})" if kept < MIN_KEPT or met is None \
        else "met" if met else "**missed**"
    return f"{sign} {bound:.2f}: {verdict}"


def subjects_cell(r):
    """Each subject's median ns per operation, with its slower thread's share on 2 threads."""
    cells = []
    for i, name in enumerate(r["subjects"]):
        text = f"{name} {sig3(r['ns'][i])}" if r["ns"][i] else f"{name} n/a"
        share = (r.get("slower_share") or [None] * 3)[i]
        if r["threads"][i] > 1 and share is not None:
            text += f" (slower thread {100 * share:.0f}%)"
        cells.append(text)
    return ", ".join(cells)


def rows_table(records, unit_note=True):
    """The table of paired rows."""
    lines = []
    if unit_note:
        lines += ["Each row: its subjects take turns, one chunk each per turn; the figures are "
                  "the median (p25-p75) of the kept turns' ratios. *time*: time per check, "
                  "cellrate's side over the other's (below 1: cellrate faster); *rate*: checks "
                  "per second over all threads (above 1: cellrate's side faster). *ns*: each "
                  "subject's median wall ns per check over all its threads. A turn is kept only "
                  "if every chunk's threads overlapped (see *Method*); *slower thread*: the "
                  "share of a 2-thread subject's checks that its slower thread made (50%: an "
                  "even split).", ""]
    lines += ["| row | ratio | bound | / floor | floor bound | ns per check | turns kept "
              "(dropped) |", "|---|---|---|---|---|---|---|"]
    for r in records:
        has_floor = len(r["subjects"]) == 3
        floor = spread(r["floor_ratio"]) if has_floor else ""
        lines.append(
            f"| {r['name']} | {r['unit']} {spread(r['ratio'])} | "
            f"{bound_cell(r['unit'], r['bound'], r['met'], r['kept'])} | {floor} | "
            f"{bound_cell(r['unit'], r['floor_bound'], r['floor_met'], r['kept']) if has_floor else ''} | "
            f"{subjects_cell(r)} | {int(r['kept'])} ({int(r['dropped'])}) |")
    return lines


def cas_table(records, control):
    lines = ["| loop, 2 threads on one word | M checks/s | failed CAS per 1,000 checks | "
             "handoffs per 1,000 checks | checks per handoff | slower thread's share | chunks "
             "kept (dropped) |",
             "|---|---|---|---|---|---|---|"]
    for r in records:
        if not r["kept"]:
            lines.append(f"| {r['name']} | no chunk kept | | | | | 0 ({int(r['dropped'])}) |")
            continue
        handoffs = r["handoffs"]
        per = sig3(1 / handoffs) if handoffs else "all"
        failures = None if r["failures"] is None else 1e3 * r["failures"]
        lines.append(f"| {r['name']} | {sig3(1e3 / r['ns'])} | {fmt(failures, 3)} | "
                     f"{1e3 * handoffs:.3f} | {per} | {100 * r['slower_share']:.0f}% | "
                     f"{int(r['kept'])} ({int(r['dropped'])}) |")
    for c in control:
        lines += ["", f"Control: the bare CAS loop on {int(c['threads'])} threads on "
                  f"{int(c['cores'])} cores kept {int(c['kept'])} of {int(c['chunks'])} chunks "
                  "(threads that must take turns on a core: the overlap test must drop them)."]
    return lines


def memory_table(records):
    lines = ["| case | keys | heap, B/key | heap, MB | heap before any key, MB | resident, "
             "B/key | resident, MB | resident before any key, MB |", "|---|---|---|---|---|---|---|---|"]
    for r in records:
        lines.append(f"| {r['name']} | {int(r['keys']):,} | {r['heap_per_key']:.1f} | "
                     f"{r['heap_mb']:.1f} | {r['heap_before_mb']:.1f} | {r['rss_per_key']:.1f} | "
                     f"{r['rss_mb']:.1f} | {r['rss_before_mb']:.1f} |")
    return lines


def http_tables(records):
    cpu = [r for r in records if r["kind"] == "cpu"]
    added = [r for r in records if r["kind"] == "added"]
    lines = []
    if cpu:
        lines += [f"CPU ns per request over {int(cpu[0]['rounds'])} rounds of "
                  f"{int(cpu[0]['chunk']):,} requests, median (p25-p75):", "",
                  "| subject | CPU ns per request |", "|---|---|"]
        lines += [f"| `{r['name']}` | {r['ns'][1]:.0f} ({r['ns'][0]:.0f}-{r['ns'][2]:.0f}) |"
                  for r in cpu]
    if added:
        lines += ["", "Added time: the median (p25-p75) of the per-round differences from the "
                  "baseline; ratio: cellrate's median over tower_governor's.", "",
                  "| row | cellrate, ns | tower_governor, ns | ratio |", "|---|---|---|---|"]
        for r in added:
            c, g = r["cellrate"], r["governor"]
            lines.append(f"| {r['name']} | {c[1]:.0f} ({c[0]:.0f}-{c[2]:.0f}) | "
                         f"{g[1]:.0f} ({g[0]:.0f}-{g[2]:.0f}) | {r['ratio']:.2f} |")
    load = [r for r in records if r["kind"] == "load"]
    if load:
        first = load[0]
        lines += ["", "Real axum servers on loopback, each on a one-worker tokio runtime, driven "
                  f"by `wrk -t1 -c{int(first['connections'])} -d{int(first['secs'])}s --latency` "
                  f"({int(first['rounds'])} rounds, the servers in rotating order); each layer "
                  "with its defaults (cellrate writes `RateLimit` headers on every response, "
                  "tower_governor none on admitted ones), and cellrate without headers on "
                  "admitted responses (`cellrate_no_headers`: the work tower_governor's defaults "
                  "do); median (min-max) over the rounds, x bare taken within each round:", "",
                  "| server | requests/s | x bare | p50 latency, µs | p99 latency, µs |",
                  "|---|---|---|---|---|"]
        for r in load:
            q, b = r["per_sec"], r["of_bare"]
            lines.append(f"| {r['name']} | {q[1]:,.0f} ({q[0]:,.0f}-{q[2]:,.0f}) | "
                         f"{b[1]:.2f} ({b[0]:.2f}-{b[2]:.2f}) | {r['p50_us'][1]:.0f} | "
                         f"{r['p99_us'][1]:.0f} |")
    return lines


def redis_tables(records):
    through = [r for r in records if r["kind"] == "throughput"]
    cost = [r for r in records if r["kind"] == "server_cost"]
    memory = [r for r in records if r["kind"] == "memory"]
    lines = []
    if through:
        lines += [f"Decisions per second ({through[0]['secs']:g} s per row) beside "
                  "redis-benchmark running the same script (the ceiling), and the server's µs "
                  "per call of each (`INFO commandstats`):", "",
                  "| workload | cellrate /s | ceiling /s | ratio | µs per call | ceiling µs |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {r['name']} | {r['cellrate']:,.0f} | {r['ceiling']:,.0f} | "
                  f"{r['cellrate'] / r['ceiling']:.2f} | {r['cellrate_us']:.2f} | "
                  f"{r['ceiling_us']:.2f} |" for r in through]
    if cost:
        lines += ["", f"Server cost per call, 100,000 random keys, redis-benchmark `-c 32 -P 32`, "
                  f"{int(cost[0]['calls']):,} calls per script, {len(cost[0]['rounds'])} "
                  "rounds, each script beside a minimal GCRA script doing the same; ratios: the "
                  "median of the rounds' ratios to the minimal script:", "",
                  "| script | µs per call (commandstats) | x minimal | server CPU µs per call "
                  "| x minimal | allowed |", "|---|---|---|---|---|---|"]
        lines += [f"| {r['name']} | {r['us']:.2f} | {r['us_ratio']:.2f} | {r['cpu_us']:.2f} | "
                  f"{r['cpu_ratio']:.2f} | {100 * r.get('allowed', 0):.0f}% |" for r in cost]
    if memory:
        lines += ["", "Memory per key: `used_memory` growth over the keys written, beside "
                  "`MEMORY USAGE` of one of them:", "",
                  "| keys holding | keys | bytes per key | MEMORY USAGE | value bytes |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['name']} | {r['keys']:,.0f} | {r['bytes_per_key']:.1f} | "
                  f"{r['memory_usage']:.0f} | {r['value_bytes']:.0f} |" for r in memory]
    return lines


def profile_table(counts, subjects, columns):
    """Instructions per call of `subjects` [(name, label)] in `columns` [(key, head)], where
    `counts[(name, key)]` is (instructions per call, I1 misses per call or None)."""
    head = " | ".join(h for _, h in columns)
    lines = [f"| loop | {head} |", "|---|" + "---|" * len(columns)]
    for name, label in subjects:
        cells = [fmt(counts[(name, k)][0], 0) if (name, k) in counts else "" for k, _ in columns]
        if any(cells):
            lines.append(f"| {label} | {' | '.join(cells)} |")
    return lines


def http_profile_table(counts, subjects):
    bare = counts.get(("bare", "http"))
    lines = ["| subject | instructions per request | over bare | I1 misses per request | "
             "over bare |", "|---|---|---|---|---|"]
    for name in subjects:
        if (name, "http") not in counts:
            continue
        ir, i1 = counts[(name, "http")]
        over = (f"{ir - bare[0]:,.0f}", fmt(i1 - bare[1], 1)) if bare else ("", "")
        lines.append(f"| `{name}` | {ir:,.0f} | {over[0]} | {fmt(i1, 1)} | {over[1]} |")
    return lines


def losses(records):
    """(label, text) of the paired rows that miss a bound or where cellrate's side loses, and
    of those with too few kept turns to judge."""
    out = []
    for r in records:
        label = f"{r['suite']}: {r['name']}"
        for what, bound, met, q in (("", r["bound"], r["met"], r["ratio"]),
                                    (" / floor", r["floor_bound"], r["floor_met"],
                                     r["floor_ratio"])):
            if bound is not None and verdict(r, met) == 0:
                out.append((label, f"{r['unit']}{what} {spread(q)} misses its bound "
                            f"{bound_cell(r['unit'], bound, met).split(':')[0]}"))
        theirs = r["subjects"][1]
        judged = r["kept"] >= MIN_KEPT
        if judged and r["subjects"][0] == "cellrate" and theirs in COMPETITORS and r["ratio"][1]:
            slower = r["ratio"][1] > 1 if r["unit"] == "time" else r["ratio"][1] < 1
            if slower:
                out.append((label, f"{r['unit']} {spread(r['ratio'])} against {theirs}"))
        if not judged:
            out.append((label, f"not judged: {int(r['kept'])} turns kept, {int(r['dropped'])} "
                        "dropped (chunks that failed the overlap test)"))
    return out
