//! The counts of `CL.THROTTLE` and `POST /throttle` calls and of RESP connections, kept by
//! the server across reloads, and their Prometheus text (a part of `GET /metrics`).

use cellrate::StripedCounts;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Who called.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Via {
    Resp = 0,
    Http = 1,
}

/// What a call got.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Outcome {
    Allowed = 0,
    Limited = 1,
    /// Refused arguments (an error reply, a 400).
    Invalid = 2,
}

const VIAS: [&str; 2] = ["resp", "http"];
const OUTCOMES: [&str; 3] = ["allowed", "limited", "invalid"];

/// The counts (module docs).
pub(crate) struct ThrottleCounts {
    /// Calls by `Via` and `Outcome`: striped, as every call adds to them.
    calls: StripedCounts<6>,
    // Relaxed: each read alone by a scrape; they order nothing.
    /// RESP connections open.
    pub connections: AtomicU64,
    /// RESP connections closed at once for want of room (`--resp-max-connections`).
    pub refused: AtomicU64,
    /// RESP connections closed after input that was not RESP, or beyond the bounds.
    pub protocol_errors: AtomicU64,
    /// `AUTH` and `HELLO ... AUTH` with a wrong password.
    pub auth_failures: AtomicU64,
}

impl Default for ThrottleCounts {
    fn default() -> ThrottleCounts {
        ThrottleCounts {
            calls: StripedCounts::new(),
            connections: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            protocol_errors: AtomicU64::new(0),
            auth_failures: AtomicU64::new(0),
        }
    }
}

impl ThrottleCounts {
    /// Counts a call.
    pub fn call(&self, via: Via, outcome: Outcome) {
        self.calls.add(via as usize * 3 + outcome as usize);
    }

    /// Counts a RESP-level event (a field of `self`).
    pub fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The figures of the throttle table in this process, if the buckets are here.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TableFigures {
    pub keys: u64,
    pub evictions: u64,
    pub refusals: u64,
    pub quota_changes: u64,
}

/// Appends the Prometheus text of `counts` and `table` to `out`.
pub(crate) fn render(out: &mut String, counts: &ThrottleCounts, table: Option<TableFigures>) {
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    out.push_str("# HELP cellrate_throttle_calls_total CL.THROTTLE (RESP) and POST /throttle (HTTP) calls, by outcome.\n");
    out.push_str("# TYPE cellrate_throttle_calls_total counter\n");
    let sums = counts.calls.sums();
    for (v, via) in VIAS.iter().enumerate() {
        for (o, outcome) in OUTCOMES.iter().enumerate() {
            let _ = writeln!(
                out,
                "cellrate_throttle_calls_total{{via=\"{via}\",outcome=\"{outcome}\"}} {}",
                sums[v * 3 + o]
            );
        }
    }
    let series = [
        (
            "cellrate_resp_connections",
            "gauge",
            "RESP connections open.",
            load(&counts.connections),
        ),
        (
            "cellrate_resp_connections_refused_total",
            "counter",
            "RESP connections closed at once: --resp-max-connections were open.",
            load(&counts.refused),
        ),
        (
            "cellrate_resp_protocol_errors_total",
            "counter",
            "RESP connections closed after input that was not RESP or broke a bound.",
            load(&counts.protocol_errors),
        ),
        (
            "cellrate_resp_auth_failures_total",
            "counter",
            "RESP AUTH attempts with a wrong password.",
            load(&counts.auth_failures),
        ),
    ];
    let table = table.map(|t| {
        [
            (
                "cellrate_throttle_keys",
                "gauge",
                "Keys held by the throttle table.",
                t.keys,
            ),
            (
                "cellrate_throttle_evictions_total",
                "counter",
                "Throttle buckets not full forgotten for a new key (--overflow evict).",
                t.evictions,
            ),
            (
                "cellrate_throttle_new_keys_refused_total",
                "counter",
                "New throttle keys refused for lack of room (--overflow deny).",
                t.refusals,
            ),
            (
                "cellrate_throttle_quota_changes_total",
                "counter",
                "Calls that changed a key's parameters (its stored time kept).",
                t.quota_changes,
            ),
        ]
    });
    for (name, kind, help, value) in series.iter().chain(table.iter().flatten()) {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
        );
    }
}
