//! Naming a limiter: the opt-in to counting its decisions ([`Stats`]) and, with the `metrics`
//! feature, to publishing them (docs/design.md §11).

use crate::clock::Clock;
use crate::engine::counting::{decisions, Named};
use crate::limiter::Limiter;
use crate::stats::Stats;
use alloc::borrow::Cow;

impl<C: Clock> Limiter<C> {
    /// The same limiter, named: it counts its decisions from now on ([`stats`](Self::stats)),
    /// and with the `metrics` feature publishes them under this name
    /// ([`publish_metrics`](Self::publish_metrics)). The name is a label of bounded
    /// cardinality, never one per request or per key. Limiters that share a name add up in
    /// its series. Naming a named limiter again renames it and keeps its counts.
    ///
    /// ```
    /// use cellrate::{Limiter, ManualClock, Quota};
    ///
    /// let limiter = Limiter::with_clock(Quota::per_second(2), ManualClock::new()).named("api");
    /// assert!(limiter.check().is_ok());
    /// assert!(limiter.check().is_ok());
    /// assert!(limiter.check().is_err());
    /// let stats = limiter.stats();
    /// assert_eq!((stats.allowed, stats.denied), (2, 1));
    /// ```
    pub fn named(mut self, name: impl Into<Cow<'static, str>>) -> Limiter<C> {
        self.named = Named::renamed(self.named.take(), name);
        // Counting rides on the moved path, so that unnamed limiters test nothing for it.
        self.cells.move_head();
        self
    }

    /// The counts of this limiter's decisions since it was named (all 0 if it is not): see
    /// [`Stats`] for what is counted.
    pub fn stats(&self) -> Stats {
        decisions(&self.named)
    }

    /// Publishes this limiter's counts to the `metrics` facade, if it is named:
    /// `cellrate_allowed_total`, `cellrate_denied_total` and `cellrate_peeks_total`, labelled
    /// `limiter` = its name, each incremented by what was counted since the last publish. Call
    /// it before each scrape or from a timer, with the recorder installed (what is handed over
    /// while none is installed is gone). The histogram `cellrate_wait_seconds` is recorded as
    /// each wait ends.
    #[cfg(feature = "metrics")]
    pub fn publish_metrics(&self) {
        if let Some(named) = &self.named {
            let s = self.stats();
            let decisions = crate::stats::KeyedStats {
                allowed: s.allowed,
                denied: s.denied,
                peeks: s.peeks,
                ..Default::default()
            };
            named.exported.publish(&decisions, false);
        }
    }
}
