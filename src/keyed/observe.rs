//! What a keyed limiter counts: [`KeyedLimiter::named`], [`KeyedLimiter::stats`] and, with the
//! `metrics` feature, [`KeyedLimiter::publish_metrics`]. See src/named.rs for the design.

use super::KeyedLimiter;
use crate::engine::counting::{self as named, Named};
use crate::stats::KeyedStats;
use alloc::borrow::Cow;

impl<K, C> KeyedLimiter<K, C> {
    /// The same limiter, named: it counts its decisions from now on ([`stats`](Self::stats)),
    /// and with the `metrics` feature publishes them under this name
    /// ([`publish_metrics`](Self::publish_metrics)). The name is a label of bounded
    /// cardinality; keys are never labels. Limiters that share a name add up in its series;
    /// naming a named limiter again renames it and keeps its counts.
    ///
    /// ```
    /// use cellrate::{KeyedLimiter, ManualClock, Quota};
    ///
    /// let limiter =
    ///     KeyedLimiter::<&str, _>::builder(Quota::per_second(1)).clock(ManualClock::new()).build().named("login");
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

    /// The counts since the limiter was built: keys held, idle and overflow evictions and
    /// overflow denials always; allowed, denied and peeks only since it was
    /// [`named`](Self::named) (0 otherwise). See [`KeyedStats`].
    pub fn stats(&self) -> KeyedStats {
        let mut stats = KeyedStats::default();
        self.table.counters.fill(&mut stats);
        let decisions = named::decisions(&self.named);
        (stats.allowed, stats.denied, stats.peeks) =
            (decisions.allowed, decisions.denied, decisions.peeks);
        stats
    }

    /// The limiter's name and counts, for the key handles.
    pub(crate) fn named_ref(&self) -> Option<&Named> {
        self.named.as_deref()
    }

    /// Publishes this limiter's counts to the `metrics` facade, if it is named, as
    /// [`Limiter::publish_metrics`](crate::Limiter::publish_metrics) does: its decision
    /// counters, `cellrate_evictions_total` (label `reason`: `idle` or `overflow`) and
    /// `cellrate_overflow_denials_total` incremented by what changed since it last published,
    /// and the gauge `cellrate_keys` moved by the change in keys held (a limiter dropped takes
    /// its keys out of it), each labelled `limiter` = its name.
    #[cfg(feature = "metrics")]
    pub fn publish_metrics(&self) {
        if let Some(named) = &self.named {
            named.exported.publish(&self.stats(), true);
        }
    }
}
