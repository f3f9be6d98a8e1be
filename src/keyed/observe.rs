//! What a keyed limiter counts: [`KeyedLimiter::named`] and [`KeyedLimiter::stats`]
//! (docs/design.md §11).

use super::KeyedLimiter;
use crate::engine::counting::{self as named, Named};
use crate::stats::KeyedStats;
use alloc::borrow::Cow;

impl<K, C> KeyedLimiter<K, C> {
    /// The same limiter, named: as [`Limiter::named`](crate::Limiter::named). Keys are never
    /// labels.
    ///
    /// ```
    /// use cellrate::{KeyedLimiter, ManualClock, Quota};
    ///
    /// let limiter = KeyedLimiter::<&str, _>::builder(Quota::per_second(1))
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .named("login");
    /// assert!(limiter.check_key("alice").is_ok());
    /// assert!(limiter.check_key("alice").is_err());
    /// assert!(limiter.key("bob").check().is_ok());
    /// let stats = limiter.stats();
    /// assert_eq!((stats.allowed, stats.denied, stats.keys), (2, 1, 2));
    /// ```
    pub fn named(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.named = Named::renamed(self.named.take(), name);
        self
    }

    /// The counts since the limiter was built; decisions only since it was
    /// [`named`](Self::named) ([`KeyedStats`]).
    pub fn stats(&self) -> KeyedStats {
        let mut stats = KeyedStats::default();
        self.table.counters.fill(&mut stats);
        let decisions = named::decisions(&self.named);
        (stats.allowed, stats.denied, stats.peeks) =
            (decisions.allowed, decisions.denied, decisions.peeks);
        stats
    }

    pub(crate) fn named_ref(&self) -> Option<&Named> {
        self.named.as_deref()
    }

    /// Publishes this limiter's counts as
    /// [`Limiter::publish_metrics`](crate::Limiter::publish_metrics) does, and
    /// `cellrate_evictions_total` (label `reason`: `idle` or `overflow`),
    /// `cellrate_overflow_denials_total` and the gauge `cellrate_keys`.
    #[cfg(feature = "metrics")]
    pub fn publish_metrics(&self) {
        if let Some(named) = &self.named {
            named.exported.publish(&self.stats(), true);
        }
    }
}
