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
        let name: Arc<str> = Arc::from(&*name.into());
        self.name = Some(Arc::new(match &self.name {
            #[cfg(feature = "metrics")]
            Some(old) => old.renamed(name),
            _ => Name::new(name),
        }));
        self
    }

    /// The name given by [`named`](Self::named), if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref().map(Name::as_str)
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

    /// Publishes this limiter's counts to the `metrics` facade, if it is named: each counter
    /// is incremented by what was counted since the last publish of this limiter or a clone,
    /// so limiters of one name add up in one series and a limiter made again under a name
    /// goes on from where the series is. Each series is labelled
    /// `limiter` = its name: `cellrate_allowed_total`, `cellrate_denied_total` and
    /// `cellrate_peeks_total` (Redis's decisions), `cellrate_cached_denials_total`,
    /// `cellrate_redis_failures_total` (labels `policy`: `fail_open`, `fail_closed` or
    /// `local`, and `outcome`: `allowed` or `denied`), `cellrate_unknown_outcomes_total`,
    /// `cellrate_usage_errors_total`, `cellrate_out_of_memory_total` (of the failures, Redis's
    /// `OOM` refusals), and the local fallback's `cellrate_keys`,
    /// `cellrate_evictions_total` and `cellrate_overflow_denials_total`.
    #[cfg(feature = "metrics")]
    pub fn publish_metrics(&self) {
        if let Some(name) = &self.name {
            name.publish(&self.stats());
        }
    }
}

/// A named Redis limiter's side of the facade, shared by its clones: the name, its label, and
/// what has been handed over so far. Each publish *increments* every counter by what was
/// counted since the last one (never sets a total, which the facade's usual storage keeps as a
/// maximum), and moves the gauge of keys by its change: two limiters of one name add up in one
/// series, a limiter made again under a name goes on from where the series is, and the last
/// clone dropped takes its keys out of the gauge.
#[derive(Debug)]
pub(crate) struct Name {
    name: Arc<str>,
    #[cfg(feature = "metrics")]
    published: std::sync::Mutex<RedisStats>,
}

impl Name {
    fn new(name: Arc<str>) -> Name {
        Name {
            name,
            #[cfg(feature = "metrics")]
            published: std::sync::Mutex::new(RedisStats::default()),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.name
    }
}

#[cfg(feature = "metrics")]
impl Name {
    fn lock(&self) -> std::sync::MutexGuard<'_, RedisStats> {
        // Only counts live behind the lock: a panic while it was held leaves them usable.
        self.published.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The same counts under another name: what was published stays under the old name, the
    /// next publish hands the new one only what comes after, and the keys held move to the
    /// new name's gauge then.
    fn renamed(&self, name: Arc<str>) -> Name {
        let published = core::mem::take(&mut *self.lock());
        leave(&self.name, &published);
        Name {
            name,
            published: std::sync::Mutex::new(RedisStats {
                keys: 0,
                ..published
            }),
        }
    }

    fn publish(&self, now: &RedisStats) {
        use metrics::{counter, gauge, SharedString};
        let mut old = self.lock();
        let l = SharedString::from(String::from(&*self.name));
        let up = |new: u64, old: u64| new.saturating_sub(old);
        let counters = [
            ("cellrate_allowed_total", now.allowed, old.allowed),
            ("cellrate_denied_total", now.denied, old.denied),
            ("cellrate_peeks_total", now.peeks, old.peeks),
            (
                "cellrate_cached_denials_total",
                now.cached_denied,
                old.cached_denied,
            ),
            (
                "cellrate_overflow_denials_total",
                now.overflow_denials,
                old.overflow_denials,
            ),
            ("cellrate_unknown_outcomes_total", now.unknown, old.unknown),
            ("cellrate_usage_errors_total", now.errors, old.errors),
            ("cellrate_out_of_memory_total", now.oom, old.oom),
        ];
        for (series, new, was) in counters {
            counter!(series, "limiter" => l.clone()).increment(up(new, was));
        }
        let evictions = [
            ("idle", now.idle_evictions, old.idle_evictions),
            ("overflow", now.overflow_evictions, old.overflow_evictions),
        ];
        for (reason, new, was) in evictions {
            counter!("cellrate_evictions_total", "limiter" => l.clone(), "reason" => reason)
                .increment(up(new, was));
        }
        let failures = [
            ("fail_open", "allowed", now.failed_open, old.failed_open),
            (
                "fail_closed",
                "denied",
                now.failed_closed,
                old.failed_closed,
            ),
            ("local", "allowed", now.local_allowed, old.local_allowed),
            ("local", "denied", now.local_denied, old.local_denied),
        ];
        for (policy, outcome, new, was) in failures {
            counter!(
                "cellrate_redis_failures_total",
                "limiter" => l.clone(),
                "policy" => policy,
                "outcome" => outcome
            )
            .increment(up(new, was));
        }
        gauge!("cellrate_keys", "limiter" => l).increment(now.keys as f64 - old.keys as f64);
        *old = *now;
    }
}

/// Takes a limiter's keys out of its name's gauge: it is dropped or renamed.
#[cfg(feature = "metrics")]
fn leave(name: &str, published: &RedisStats) {
    if published.keys > 0 {
        let l = metrics::SharedString::from(String::from(name));
        metrics::gauge!("cellrate_keys", "limiter" => l).decrement(published.keys as f64);
    }
}

#[cfg(feature = "metrics")]
impl Drop for Name {
    fn drop(&mut self) {
        let published = *self.lock();
        leave(&self.name, &published);
    }
}
