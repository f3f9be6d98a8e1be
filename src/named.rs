//! Naming a limiter: the opt-in to counting its decisions ([`Stats`]) and, with the `metrics`
//! feature, to publishing them.
//!
//! An unnamed limiter counts nothing on its checks. A named [`Limiter`]'s bucket is moved once
//! (same quota, same TAT), so that its checks take the path of a changed limiter, where the
//! count is made, and an unnamed one's check tests nothing for it; a keyed limiter's check
//! tests its `named` field (one predicted branch). A named one adds one call per check to its
//! [`Tally`] (a thread-local read and an uncontended atomic add on a stripe of its own; see
//! `tally.rs`), and its name labels what it publishes.

use crate::clock::Clock;
use crate::limiter::Limiter;
use crate::outcome::{Allowed, Denied};
use crate::stats::Stats;
use crate::tally::Tally;
use alloc::borrow::Cow;
use alloc::boxed::Box;

/// What a named limiter keeps besides its bucket: its name and its counts.
pub(crate) struct Named {
    pub(crate) name: Cow<'static, str>,
    pub(crate) tally: Tally,
}

/// The name only: the stripes are noise in a limiter's `Debug`.
impl core::fmt::Debug for Named {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Named").field(&self.name).finish()
    }
}

impl Named {
    pub(crate) fn boxed(name: impl Into<Cow<'static, str>>) -> Option<Box<Named>> {
        Some(Box::new(Named {
            name: name.into(),
            tally: Tally::new(),
        }))
    }

    /// Counts `decision` of a request of `cost` tokens.
    #[inline]
    pub(crate) fn record(&self, cost: u32, decision: &Result<Allowed, Denied>) {
        self.tally.record(decision.is_ok(), cost)
    }

    /// The counts of decisions, into `stats`.
    pub(crate) fn fill(&self, stats: &mut Stats) {
        let t = self.tally.totals();
        stats.allowed = t.allowed;
        stats.denied = t.denied;
        stats.peeks = t.peeks;
    }
}

/// The name of a limiter whose opt-in is `named`.
pub(crate) fn name_of(named: &Option<Box<Named>>) -> Option<&str> {
    named.as_deref().map(|n| &*n.name)
}

/// A limiter's counts of decisions, into `stats` (nothing if it is not named).
pub(crate) fn fill(named: &Option<Box<Named>>, stats: &mut Stats) {
    if let Some(named) = named {
        named.fill(stats);
    }
}

/// Counts `decision` if the limiter is named. The branch an unnamed limiter pays.
#[inline(always)]
pub(crate) fn count(named: &Option<Box<Named>>, cost: u32, decision: &Result<Allowed, Denied>) {
    if let Some(named) = named {
        named.record(cost, decision);
    }
}

/// Counts a completed wait (`wait_n`, `until_ready_n`) if the limiter is named: allowed once
/// its tokens were there, denied if it was refused; with the `metrics` feature an allowed one
/// records `waited`, the time it actually waited. A wait dropped before it ended (its tokens
/// given back) is not counted.
pub(crate) fn count_wait(
    named: Option<&Named>,
    cost: u32,
    answer: &Result<Allowed, Denied>,
    waited: core::time::Duration,
) {
    let Some(named) = named else { return };
    named.tally.record(answer.is_ok(), cost);
    #[cfg(feature = "metrics")]
    if answer.is_ok() {
        crate::export::record_wait(&named.name, waited);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = waited;
}

impl<C: Clock> Limiter<C> {
    /// The same limiter, named: it counts its decisions from now on ([`stats`](Self::stats)),
    /// and with the `metrics` feature publishes them under this name
    /// ([`publish_metrics`](Self::publish_metrics)). The name is a label of bounded
    /// cardinality: one per limiter in the program, never one per request or per key.
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
        self.named = Named::boxed(name);
        // Counting rides on the path of a limiter whose quota changed: moving the bucket once
        // (same quota, same TAT) puts every check of this limiter on it, so that the checks
        // of unnamed limiters test nothing for counting (docs/design.md, section 11).
        self.cells.move_head();
        self
    }

    /// The name given by [`named`](Self::named), if any.
    pub fn name(&self) -> Option<&str> {
        name_of(&self.named)
    }

    /// The counts of this limiter's decisions since it was named (all 0 if it is not): see
    /// [`Stats`] for what is counted.
    pub fn stats(&self) -> Stats {
        let mut stats = Stats::default();
        fill(&self.named, &mut stats);
        stats
    }

    /// Publishes this limiter's counts to the `metrics` facade, if it is named:
    /// `cellrate_allowed_total`, `cellrate_denied_total` and `cellrate_peeks_total`, labelled
    /// `limiter` = its name, set to the totals (`Counter::absolute`). Call it before each
    /// scrape or from a timer; the checks themselves never call the facade. Nothing is
    /// published for an unnamed limiter, and nothing happens when no recorder is installed.
    #[cfg(feature = "metrics")]
    pub fn publish_metrics(&self) {
        if let Some(named) = &self.named {
            crate::export::publish_decisions(&named.name, &self.stats());
        }
    }
}
