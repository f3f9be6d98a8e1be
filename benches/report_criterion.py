"""The criterion suites' tables and chart rows for benches/report.py (standard library only).

A criterion id is split into a subject (cellrate[_variant], mutex_bucket, governor, floor_*, or
any other name, which gets its own column) and a row (the group and the id's other parts).
Results are criterion's medians, read from <target>/criterion/**/new/{benchmark,estimates}.json
written during the recorded criterion runs.
"""

import json
import re
from collections import namedtuple

from report_chart import sig3

COLUMNS = ("cellrate", "mutex_bucket", "governor", "floor")
HEAD = {column: column.replace("_", " ") for column in COLUMNS}
SCENARIO = {"direct/allowed_at": "allowed, time passed in",
            "direct/denied_at": "denied, time passed in",
            "direct/allowed_clock": "allowed, real clock",
            "direct/denied_clock": "denied, real clock"}
TABLE_TITLE = {"direct": "direct: one limiter, one thread",
               "keyed": "keyed: one thread, every key known, visited in random order",
               "keyed_batch": "keyed batches: 64 keys per iteration, one thread, real clocks",
               "keyed_floor": "keyed floor: per check a clock read, then a load and a CAS of a "
                              "random slot of a 1,250,000-slot array (20 MB), no hash, no search; "
                              "siphash then cas64: the keys of the keyed rows, the slot picked "
                              "by the key's SipHash in an array of keys x 5/4 slots (cellrate's "
                              "table for that many keys), then a load and a CAS, time passed in",
               "keyed_parts": "keyed parts: the hash and the clock reads a check is made of"}
UNIT = {r"keyed_check_\d+_keys|keyed_batch|keyed_floor": "u64 key",
        r"keyed_check_\d+_string_keys": "String key"}  # what a number counts, by group regex
FLOOR = {"cas": "bare CAS", "load": "bare load", "clock_read": "Instant::now",
         "quanta_read": "quanta read"}
VARIANT = {"quanta": "cellrate on QuantaClock", "at_now": "cellrate, time passed in",
           "instant": "cellrate on Instant (MonotonicClock)",
           "huge_pages": "cellrate, time passed in, table in 2 MiB pages (huge_pages())",
           "siphash_at_now": "cellrate, time passed in, SipHash-1-3 fingerprints",
           "cached": "both on a clock refreshed every 1 ms (TickClock, QuantaUpkeepClock)",
           "read": "outcome read (cellrate: remaining() and reset_after(); governor: its "
                   "snapshot's remaining_burst_capacity())",
           "batch": "cellrate check_many (one call per 64 keys)"}

Result = namedtuple("Result", "group parts name column variant ns elements run")


def classify(name):
    """(column, variant) of a subject name; column None for subjects outside COLUMNS."""
    for column in ("cellrate", "mutex_bucket", "governor"):
        if name == column or name.startswith(column + "_"):
            return column, name[len(column) + 1:]
    return ("floor", name[len("floor_"):]) if name.startswith("floor_") else (None, "")


def load_results(criterion_dir, runs):
    """Every criterion result written during one of the recorded criterion `runs`."""
    results = []
    for meta_path in sorted(criterion_dir.glob("**/new/benchmark.json")):
        estimates = meta_path.with_name("estimates.json")
        if not estimates.exists():
            continue
        mtime = estimates.stat().st_mtime
        run = next((r for r in runs if r.begin <= mtime <= r.end), None)
        if run is None:
            continue  # from an earlier run
        meta = json.loads(meta_path.read_text())
        ns = json.loads(estimates.read_text())["median"]["point_estimate"]
        parts = (meta.get("function_id") or "value").split("/")
        known = [i for i, p in enumerate(parts) if classify(p)[0]]
        name = parts.pop(known[0] if known else -1)  # unknown subjects: the function's last part
        parts += [meta["value_str"]] if meta.get("value_str") else []
        elements = (meta.get("throughput") or {}).get("Elements")
        results.append(Result(meta["group_id"], tuple(parts), name, *classify(name), ns,
                              elements, run))
    return results


def collect_rows(results):
    """{(group, parts, variant): {column or subject name: Result}}; a cellrate variant gets its
    own row, which shows the same mutex bucket and governor measurements as the plain row
    unless the variant has its own."""
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


def ratio(mine, other, rate):
    """`mine` over `other`: throughput ratio if `rate`, else time ratio; n/a if missing."""
    if mine is None or other is None:
        return "n/a"
    return f"{per_second(mine) / per_second(other) if rate else mine.ns / other.ns:.2f}"


def floor_name(r):
    return FLOOR.get(r.variant, r.variant.replace("_", " "))


def table_md(prefix, keyed, context):
    """One markdown table for the rows `keyed` [(key, row)] of table `prefix`; `context(run)`
    gives the lines that say how and under what load a run was made."""
    results = [r for _, row in keyed for r in row.values()]
    rate = any(r.elements for r in results)
    extra = sorted({k for _, row in keyed for k in row if k not in COLUMNS})
    note = ("Decisions per second from the median time; ratios are cellrate's throughput over "
            "the other's: above 1 = cellrate faster." if rate else "Median ns per check; "
            "ratios are cellrate's time over the other's: below 1 = cellrate faster.")
    head = ["scenario", *(HEAD[c] for c in COLUMNS), *extra, "cellrate/governor", "cellrate/mutex"]
    runs = sorted({r.run for r in results}, key=lambda r: r.begin)
    lines = [f"#### {TABLE_TITLE.get(prefix, prefix.replace('_', ' '))}", "",
             *(line for run in runs for line in context(run)), "", note, "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, row in keyed:
        cells = [row_label(*key)]
        for column in (*COLUMNS, *extra):
            r = row.get(column)
            text = ("n/a" if r is None else sig3(per_second(r) / 1e6 if rate else r.ns)) + \
                (" M/s" if rate else " ns")
            text = text if r else ""
            cells.append(f"{text} ({floor_name(r)})" if column == "floor" and r else text)
        mine = row.get("cellrate")
        cells += [ratio(mine, row.get(c), rate) for c in ("governor", "mutex_bucket")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def tables(rows, prefixes, context):
    """The markdown tables of the criterion rows whose table is one of `prefixes`."""
    keys = sorted(rows, key=row_order)
    out = []
    for prefix in prefixes:
        keyed = [(k, rows[k]) for k in keys if table_of(k[0]) == prefix]
        if keyed:
            out += [table_md(prefix, keyed, context), ""]
    return out


def losses(rows):
    """(label, text) of the criterion rows where cellrate is slower than governor."""
    out = []
    for key in sorted(rows, key=row_order):
        mine, theirs = rows[key].get("cellrate"), rows[key].get("governor")
        if mine and theirs:
            rate = bool(mine.elements)
            slower = per_second(mine) < per_second(theirs) if rate else mine.ns > theirs.ns
            if slower:
                what = "throughput" if rate else "time"
                out.append((f"{table_of(key[0])}: {row_label(*key)}",
                            f"{what} {ratio(mine, theirs, rate)} of governor's (criterion)"))
    return out


def chart_rows(rows):
    """(label, {column: ns}, floor ns or None) per single-thread row with a bar to draw."""
    out = []
    for key in sorted(rows, key=row_order):
        ns = {c: r.ns / (r.elements or 1) for c, r in rows[key].items() if c in COLUMNS}
        prefix = table_of(key[0]).replace("_", " ")
        label = row_label(*key) if prefix == "direct" else f"{prefix}: {row_label(*key)}"
        if prefix in ("direct", "keyed") and any(c in ns for c in ("cellrate", "governor")):
            out.append((label, ns, ns.get("floor")))
    return out
