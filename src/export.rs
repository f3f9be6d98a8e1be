//! Publishing a named limiter's counts to the `metrics` facade (feature `metrics`).
//!
//! The checks never call the facade. They add to the limiter's striped counters, and
//! `publish_metrics` sets the facade's counters to the totals (`Counter::absolute`) and its
//! gauge to the keys held: whatever recorder is installed when it is called gets them, and
//! with none installed it does nothing. Incrementing the facade's counters on each check
//! instead would cost a call into the recorder per check, and most recorders keep one
//! shared atomic per series, the very contention the stripes avoid. The one value recorded
//! as it happens is a wait's duration, into a histogram, since a histogram cannot be
//! rebuilt from totals and a wait is no hot path (it sleeps).
//!
//! Labels are bounded: `limiter` (the name given), `reason` of an eviction, `policy` and
//! `outcome` of a Redis failure. Never a key.

use crate::stats::Stats;
use core::time::Duration;
use metrics::{counter, gauge, histogram, SharedString};

/// The label value of a limiter's name.
fn label(name: &str) -> SharedString {
    SharedString::from(String::from(name))
}

/// The decision counters every named limiter publishes.
pub(crate) fn publish_decisions(name: &str, s: &Stats) {
    let l = label(name);
    counter!("cellrate_allowed_total", "limiter" => l.clone()).absolute(s.allowed);
    counter!("cellrate_denied_total", "limiter" => l.clone()).absolute(s.denied);
    counter!("cellrate_peeks_total", "limiter" => l).absolute(s.peeks);
}

/// The keys held and the keyed table's evictions and overflow denials.
pub(crate) fn publish_keys(name: &str, s: &Stats) {
    let l = label(name);
    gauge!("cellrate_keys", "limiter" => l.clone()).set(s.keys as f64);
    counter!("cellrate_evictions_total", "limiter" => l.clone(), "reason" => "idle")
        .absolute(s.idle_evictions);
    counter!("cellrate_evictions_total", "limiter" => l.clone(), "reason" => "overflow")
        .absolute(s.overflow_evictions);
    counter!("cellrate_overflow_denials_total", "limiter" => l).absolute(s.overflow_denials);
}

/// The Redis limiter's own counters: deny-cache refusals, failures by policy, unknown
/// outcomes and usage errors.
#[cfg(feature = "redis")]
pub(crate) fn publish_redis(name: &str, s: &Stats) {
    let l = label(name);
    counter!("cellrate_cached_denials_total", "limiter" => l.clone()).absolute(s.cached_denied);
    let failures = [
        ("fail_open", "allowed", s.failed_open),
        ("fail_closed", "denied", s.failed_closed),
        ("local", "allowed", s.local_allowed),
        ("local", "denied", s.local_denied),
    ];
    for (policy, outcome, n) in failures {
        counter!(
            "cellrate_redis_failures_total",
            "limiter" => l.clone(),
            "policy" => policy,
            "outcome" => outcome
        )
        .absolute(n);
    }
    counter!("cellrate_unknown_outcomes_total", "limiter" => l.clone()).absolute(s.unknown);
    counter!("cellrate_usage_errors_total", "limiter" => l).absolute(s.errors);
}

/// Records how long a waiting form of a named limiter waits for its tokens, in seconds.
pub(crate) fn record_wait(name: &str, wait: Duration) {
    histogram!("cellrate_wait_seconds", "limiter" => label(name)).record(wait.as_secs_f64());
}
