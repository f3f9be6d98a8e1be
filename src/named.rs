//! Naming a limiter: the opt-in to counting its decisions ([`Stats`]) and, with the `metrics`
//! feature, to publishing them.
//!
//! An unnamed limiter counts nothing on its checks. A named [`Limiter`]'s bucket is moved once
//! (same quota, same TAT), so that its checks take the path of a changed limiter, where the
//! count is made, and an unnamed one's check tests nothing for it; a keyed limiter's check
//! tests its `named` field (one predicted branch). A named one adds one call per check to its
//! [`Tally`] (a thread-local read and an add, with no locked instruction, to a line of the
//! thread's own; see `tally.rs`), and its name labels what it publishes.
//!
//! A name is a label, not an identity: several limiters may share one, and then their series
//! add up (`export.rs`). Naming a limiter again renames it: its counts go on.

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
        // Counting rides on the path of a limiter whose quota changed: moving the bucket once
        // (same quota, same TAT) puts every check of this limiter on it, so that the checks
        // of unnamed limiters test nothing for counting (docs/design.md, section 11).
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
    /// `limiter` = its name, each incremented by what the limiter counted since it last
    /// published, so that limiters sharing a name add up. Call it before each scrape or from a
    /// timer, with the recorder installed; the checks themselves never call the facade.
    /// Nothing is published for an unnamed limiter. Install the recorder before the first
    /// publish: what a publish hands over while none is installed is gone, and is not handed
    /// over again. The histogram `cellrate_wait_seconds` is recorded as each wait (or paced
    /// item) ends, to the recorder installed then.
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
