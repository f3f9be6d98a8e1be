//! What a keyed limiter counts: [`KeyedLimiter::named`], [`KeyedLimiter::stats`] and, with the
//! `metrics` feature, [`KeyedLimiter::publish_metrics`]. See src/named.rs for the design.

use super::KeyedLimiter;
use crate::named::{self, Named};
use crate::stats::Stats;
use alloc::borrow::Cow;

impl<K, C> KeyedLimiter<K, C> {
    /// The same limiter, named: it counts its decisions from now on ([`stats`](Self::stats)),
    /// and with the `metrics` feature publishes them under this name
    /// ([`publish_metrics`](Self::publish_metrics)). The name is a label of bounded
    /// cardinality, one per limiter; keys are never labels.
    ///
    /// ```
    /// use cellrate::{KeyedLimiter, ManualClock, Quota};
    ///
    /// let limiter =
    ///     KeyedLimiter::<&str, _>::with_clock(Quota::per_second(1), ManualClock::new()).named("login");
    /// assert!(limiter.check_key("alice").is_ok());
    /// assert!(limiter.check_key("alice").is_err());
    /// assert!(limiter.key("bob").check().is_ok());
    /// let stats = limiter.stats();
    /// assert_eq!((stats.allowed, stats.denied, stats.keys), (2, 1, 2));
    /// ```
    pub fn named(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.named = Named::boxed(name);
        self
    }

    /// The name given by [`named`](Self::named), if any.
    pub fn name(&self) -> Option<&str> {
        named::name_of(&self.named)
    }

    /// The counts since the limiter was built: keys held, idle and overflow evictions and
    /// overflow denials always; allowed, denied and peeks only since it was
    /// [`named`](Self::named) (0 otherwise). See [`Stats`].
    pub fn stats(&self) -> Stats {
        let mut stats = Stats::default();
        self.table.counters.fill(&mut stats);
        named::fill(&self.named, &mut stats);
        stats
    }

    /// The limiter's name and counts, for the key handles.
    pub(crate) fn named_ref(&self) -> Option<&Named> {
        self.named.as_deref()
    }

    /// Publishes this limiter's counts to the `metrics` facade, if it is named: the decision
    /// counters of [`Limiter::publish_metrics`](crate::Limiter::publish_metrics), the gauge
    /// `cellrate_keys`, `cellrate_evictions_total` (label `reason`: `idle` or `overflow`) and
    /// `cellrate_overflow_denials_total`, each labelled `limiter` = its name.
    #[cfg(feature = "metrics")]
    pub fn publish_metrics(&self) {
        if let Some(named) = &self.named {
            let stats = self.stats();
            crate::export::publish_decisions(&named.name, &stats);
            crate::export::publish_keys(&named.name, &stats);
        }
    }
}
