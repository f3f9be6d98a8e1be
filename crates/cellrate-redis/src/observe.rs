//! What a Redis limiter reports besides [`RedisStats`](super::RedisStats): its name for the `metrics`
//! facade and, opted in, the keys it refuses most.

#[cfg(feature = "metrics")]
use super::stats::RedisStats;
use super::RedisLimiter;
use crate::top_keys::TopKeys;
use std::borrow::Cow;
use std::sync::Arc;

impl RedisLimiter {
    /// The same limiter, named: with the `metrics` feature,
    /// [`publish_metrics`](Self::publish_metrics) labels its series with this name. It counts
    /// its answers named or not ([`stats`](Self::stats)). Clones made after share the name.
    pub fn named(mut self, name: impl Into<Cow<'static, str>>) -> RedisLimiter {
        self.name = Some(Arc::from(&*name.into()));
        self
    }

    /// The name given by [`named`](Self::named), if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The same limiter, keeping the (at most 1,024) keys its `check_key*` calls refuse most,
    /// for [`top_denied`](Self::top_denied); clones made after share the table. Counted on
    /// refusals only (by Redis, the deny cache or the failure policy), never on an admission.
    ///
    /// Approximate, in bounded memory (`capacity` keys): a Space-Saving table, in which a key
    /// refused more than `refusals / capacity` times is always held, and a new key replacing
    /// the least refused one inherits its count, so a count may be high by as much. A refusal
    /// that finds another thread updating the table is skipped rather than made to wait.
    /// The keys are never metric labels.
    pub fn track_top_denied(mut self, capacity: usize) -> RedisLimiter {
        self.top_denied = Some(Arc::new(TopKeys::new(capacity)));
        self
    }

    /// The most refused keys and their counts, most refused first (empty unless
    /// [`track_top_denied`](Self::track_top_denied) was called).
    pub fn top_denied(&self) -> Vec<(String, u64)> {
        self.top_denied
            .as_ref()
            .map_or_else(Vec::new, |top| top.snapshot())
    }

    /// Notes a refusal of `key` in the most-refused table, if there is one.
    pub(crate) fn note_denied(&self, key: &str) {
        if let Some(top) = &self.top_denied {
            top.record(key);
        }
    }

    /// Publishes this limiter's counts to the `metrics` facade, if it is named, each labelled
    /// `limiter` = its name: `cellrate_allowed_total`, `cellrate_denied_total` and
    /// `cellrate_peeks_total` (Redis's decisions), `cellrate_cached_denials_total`,
    /// `cellrate_redis_failures_total` (labels `policy`: `fail_open`, `fail_closed` or
    /// `local`, and `outcome`: `allowed` or `denied`), `cellrate_unknown_outcomes_total`,
    /// `cellrate_usage_errors_total`, and the local fallback's `cellrate_keys`,
    /// `cellrate_evictions_total` and `cellrate_overflow_denials_total`.
    #[cfg(feature = "metrics")]
    pub fn publish_metrics(&self) {
        if let Some(name) = &self.name {
            let stats = self.stats();
            publish_totals(name, &stats);
        }
    }
}

/// The Redis limiter's decision counters, keyed figures and own counters, set to totals: the
/// Redis backend's publishing, which keeps its counts in its own atomics.
#[cfg(feature = "metrics")]
fn publish_totals(name: &str, s: &RedisStats) {
    use metrics::{counter, gauge, SharedString};
    let l = SharedString::from(String::from(name));
    counter!("cellrate_allowed_total", "limiter" => l.clone()).absolute(s.allowed);
    counter!("cellrate_denied_total", "limiter" => l.clone()).absolute(s.denied);
    counter!("cellrate_peeks_total", "limiter" => l.clone()).absolute(s.peeks);
    gauge!("cellrate_keys", "limiter" => l.clone()).set(s.keys as f64);
    counter!("cellrate_evictions_total", "limiter" => l.clone(), "reason" => "idle")
        .absolute(s.idle_evictions);
    counter!("cellrate_evictions_total", "limiter" => l.clone(), "reason" => "overflow")
        .absolute(s.overflow_evictions);
    counter!("cellrate_overflow_denials_total", "limiter" => l.clone())
        .absolute(s.overflow_denials);
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
