//! The counts the server keeps and their Prometheus text form (`GET /metrics`).
//!
//! Each rule's counts live beside its buckets in the config in force, labelled by domain and
//! rule name (or composite key), never by a value a client chose: a rule removed by a reload
//! takes its series with it, so reloads leak nothing. `detailed_metric` adds a label of the
//! descriptor's values, for at most `--detailed-metric-limit` distinct values per rule; the
//! rest are counted as `_other`.

use crate::active::Active;
use crate::counts::OUTCOMES;
use crate::throttle::counts::{self as throttle_counts, TableFigures, ThrottleCounts};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, UNIX_EPOCH};

// Relaxed throughout: each counter is read alone, for a scrape; no count orders other memory.

/// The latency histogram's upper bounds, in seconds.
const BOUNDS: [f64; 12] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 1.0,
];

/// The server's own counts, kept across reloads.
#[derive(Default)]
pub(crate) struct Globals {
    /// Calls by answer: ok, over_limit, invalid_argument.
    pub calls: [AtomicU64; 3],
    /// Reloads applied, and reloads refused (invalid config).
    pub reloads_ok: AtomicU64,
    pub reloads_failed: AtomicU64,
    /// Latency histogram: one count per bound, then +Inf; and the sum in nanoseconds.
    buckets: [AtomicU64; BOUNDS.len() + 1],
    sum_ns: AtomicU64,
    /// `CL.THROTTLE` and `POST /throttle` calls, RESP connections.
    pub throttle: ThrottleCounts,
}

/// Which answer a call got.
pub(crate) enum Call {
    Ok = 0,
    OverLimit = 1,
    Invalid = 2,
}

impl Globals {
    /// Counts a call and its latency.
    pub fn call(&self, call: Call, took: Duration) {
        self.calls[call as usize].fetch_add(1, Ordering::Relaxed);
        let secs = took.as_secs_f64();
        let slot = BOUNDS
            .iter()
            .position(|&b| secs <= b)
            .unwrap_or(BOUNDS.len());
        self.buckets[slot].fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }
}

/// Escapes a label value (backslash, quote, newline).
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The Prometheus text of every count.
pub(crate) fn render(
    globals: &Globals,
    active: &Active,
    redis: Option<&cellrate_redis::RedisStats>,
    throttle_table: Option<TableFigures>,
) -> String {
    let mut out = String::with_capacity(4096);
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    out.push_str("# HELP cellrate_rls_calls_total ShouldRateLimit calls, by answer.\n");
    out.push_str("# TYPE cellrate_rls_calls_total counter\n");
    for (i, name) in ["ok", "over_limit", "invalid_argument"].iter().enumerate() {
        let _ = writeln!(
            out,
            "cellrate_rls_calls_total{{code=\"{name}\"}} {}",
            load(&globals.calls[i])
        );
    }
    out.push_str("# HELP cellrate_rls_call_seconds Time to answer a ShouldRateLimit call.\n");
    out.push_str("# TYPE cellrate_rls_call_seconds histogram\n");
    let mut cumulative = 0;
    for (i, bound) in BOUNDS.iter().enumerate() {
        cumulative += load(&globals.buckets[i]);
        let _ = writeln!(
            out,
            "cellrate_rls_call_seconds_bucket{{le=\"{bound}\"}} {cumulative}"
        );
    }
    cumulative += load(&globals.buckets[BOUNDS.len()]);
    let _ = writeln!(
        out,
        "cellrate_rls_call_seconds_bucket{{le=\"+Inf\"}} {cumulative}"
    );
    let _ = writeln!(
        out,
        "cellrate_rls_call_seconds_sum {}",
        load(&globals.sum_ns) as f64 / 1e9
    );
    let _ = writeln!(out, "cellrate_rls_call_seconds_count {cumulative}");
    out.push_str("# HELP cellrate_rls_reloads_total Config reloads, by result (failed: the last good config stays).\n");
    out.push_str("# TYPE cellrate_rls_reloads_total counter\n");
    let _ = writeln!(
        out,
        "cellrate_rls_reloads_total{{result=\"applied\"}} {}",
        load(&globals.reloads_ok)
    );
    let _ = writeln!(
        out,
        "cellrate_rls_reloads_total{{result=\"failed\"}} {}",
        load(&globals.reloads_failed)
    );
    out.push_str("# HELP cellrate_rls_config_applied_timestamp_seconds When the config in force was applied.\n");
    out.push_str("# TYPE cellrate_rls_config_applied_timestamp_seconds gauge\n");
    let applied = active
        .applied_at
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "cellrate_rls_config_applied_timestamp_seconds {}",
        applied.as_secs_f64()
    );
    rules(&mut out, active);
    throttle_counts::render(&mut out, &globals.throttle, throttle_table);
    if let Some(stats) = redis {
        out.push_str("# HELP cellrate_rls_storage_errors_total Redis calls that gave no decision, by who answered instead (the failure policy, or a refusal for a usage error).\n");
        out.push_str("# TYPE cellrate_rls_storage_errors_total counter\n");
        let answers = [
            ("failed_open", stats.failed_open),
            ("failed_closed", stats.failed_closed),
            ("local", stats.local_allowed + stats.local_denied),
            ("usage_error", stats.errors),
        ];
        for (answer, n) in answers {
            let _ = writeln!(
                out,
                "cellrate_rls_storage_errors_total{{answer=\"{answer}\"}} {n}"
            );
        }
    }
    out
}

/// The per-rule series: decisions by outcome, and the tables' keys, evictions and refusals
/// for lack of room.
fn rules(out: &mut String, active: &Active) {
    out.push_str(
        "# HELP cellrate_rls_decisions_total Descriptor statuses, by domain, rule and outcome.\n",
    );
    out.push_str("# TYPE cellrate_rls_decisions_total counter\n");
    // One buffer per family: a family's samples must come together.
    let mut tables = [String::new(), String::new(), String::new()];
    let mut seen = std::collections::HashSet::new();
    for (rule, state) in active.config.rules.iter().zip(&active.rules) {
        let (domain, name) = (label(&rule.domain), label(rule.label()));
        if !seen.insert((rule.domain.clone(), rule.label().to_owned())) {
            continue; // two rules of one name share their counts
        }
        for (i, outcome) in OUTCOMES.iter().enumerate() {
            let n = state.stats.count_of(i);
            let _ = writeln!(out, "cellrate_rls_decisions_total{{domain=\"{domain}\",rule=\"{name}\",outcome=\"{outcome}\"}} {n}");
        }
        for (value, counts) in state.stats.by_value() {
            for (i, outcome) in OUTCOMES.iter().enumerate() {
                let _ = writeln!(out, "cellrate_rls_decisions_total{{domain=\"{domain}\",rule=\"{name}\",value=\"{}\",outcome=\"{outcome}\"}} {}", label(&value), counts[i]);
            }
        }
        if let Some(table) = state.buckets.as_ref().and_then(|b| b.table()) {
            table_lines(&mut tables, &domain, &name, table);
        }
    }
    for (domain, overrides) in &active.overrides {
        let domain = label(domain);
        for ((n, unit), buckets) in overrides.each() {
            if let Some(table) = buckets.table() {
                let name = format!("override:{n}/{}", unit.name());
                table_lines(&mut tables, &domain, &name, table);
            }
        }
        let n = |i: usize| overrides.stats.count_of(i);
        for (i, outcome) in OUTCOMES.iter().enumerate().take(2) {
            let _ = writeln!(out, "cellrate_rls_decisions_total{{domain=\"{domain}\",rule=\"_override\",outcome=\"{outcome}\"}} {}", n(i));
        }
    }
    let help = [
        "# HELP cellrate_rls_keys Keys held in a rule's table.\n# TYPE cellrate_rls_keys gauge\n",
        "# HELP cellrate_rls_evictions_total Buckets not full forgotten to make room for a new key (--overflow evict).\n# TYPE cellrate_rls_evictions_total counter\n",
        "# HELP cellrate_rls_new_keys_refused_total New keys refused for lack of room in a rule's table (--overflow deny).\n# TYPE cellrate_rls_new_keys_refused_total counter\n",
    ];
    for (help, lines) in help.iter().zip(&tables) {
        out.push_str(help);
        out.push_str(lines);
    }
}

/// A table's keys, evictions and refusals, one line to each family's buffer.
fn table_lines(
    tables: &mut [String; 3],
    domain: &str,
    name: &str,
    table: &crate::storage::embedded::Table,
) {
    let s = table.stats();
    let figures = [s.keys, s.overflow_evictions, s.overflow_denials];
    let names = [
        "cellrate_rls_keys",
        "cellrate_rls_evictions_total",
        "cellrate_rls_new_keys_refused_total",
    ];
    for ((lines, metric), n) in tables.iter_mut().zip(names).zip(figures) {
        let _ = writeln!(lines, "{metric}{{domain=\"{domain}\",rule=\"{name}\"}} {n}");
    }
}
