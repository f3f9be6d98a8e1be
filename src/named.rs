//! Naming a limiter: the opt-in to counting its decisions ([`Stats`]) and, with the `metrics`
//! feature, to publishing them.
//!
//! An unnamed limiter counts nothing on its checks. A named [`Limiter`]'s bucket is moved once
//! (same quota, same TAT), so that its checks take the path of a changed limiter, where the
//! count is made, and an unnamed one's check tests nothing for it; a keyed limiter's check
//! tests its `named` field (one predicted branch). A named one adds one call per check to its
//! [`Tally`] (a thread-local read and an uncontended atomic add on a stripe of its own; see
//! `tally.rs`), and its name labels what it publishes.
//!
//! A name is a label, not an identity: several limiters may share one, and then their series
//! add up (`export.rs`). Naming a limiter again renames it: its counts go on.

use crate::clock::Clock;
use crate::engine::tally::Tally;
use crate::limiter::Limiter;
use crate::outcome::{Allowed, Denied};
use crate::stats::Stats;
use alloc::borrow::Cow;
use alloc::boxed::Box;

/// What a named limiter keeps besides its bucket: its name and its counts, and with the
/// `metrics` feature what it has published of them.
pub struct Named {
    pub(crate) name: Cow<'static, str>,
    pub(crate) tally: Tally,
    #[cfg(feature = "metrics")]
    pub(crate) exported: crate::export::Exported,
}

/// The name only: the stripes are noise in a limiter's `Debug`.
impl core::fmt::Debug for Named {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Named").field(&self.name).finish()
    }
}

impl Named {
    /// `named`, named `name`: a new name and counts, or, for a limiter named already, the same
    /// counts under the new name.
    pub(crate) fn renamed(
        named: Option<Box<Named>>,
        name: impl Into<Cow<'static, str>>,
    ) -> Option<Box<Named>> {
        let name = name.into();
        Some(Box::new(match named {
            None => Named {
                #[cfg(feature = "metrics")]
                exported: crate::export::Exported::new(&name),
                name,
                tally: Tally::new(),
            },
            Some(old) => {
                let Named {
                    tally,
                    #[cfg(feature = "metrics")]
                    exported,
                    ..
                } = *old;
                Named {
                    #[cfg(feature = "metrics")]
                    exported: exported.renamed(&name),
                    name,
                    tally,
                }
            }
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

/// A limiter's counts of decisions (all 0 if it is not named).
pub(crate) fn decisions(named: &Option<Box<Named>>) -> Stats {
    let mut stats = Stats::default();
    if let Some(named) = named {
        named.fill(&mut stats);
    }
    stats
}

/// Counts `decision` if the limiter is named. The branch an unnamed limiter pays.
#[inline(always)]
pub(crate) fn count(named: &Option<Box<Named>>, cost: u32, decision: &Result<Allowed, Denied>) {
    if let Some(named) = named {
        named.record(cost, decision);
    }
}

/// Counts a completed wait (`wait_n`, `until_ready_n`, a paced item handed on) if the limiter is named: allowed once
/// its tokens were there, denied if it was refused; with the `metrics` feature an allowed one
/// records `waited`, the time it actually waited. A wait dropped before it ended (its tokens
/// given back) is not counted.
pub(crate) fn count_wait(
    named: Option<&Named>,
    cost: u32,
    allowed: bool,
    waited: core::time::Duration,
) {
    let Some(named) = named else { return };
    named.tally.record(allowed, cost);
    #[cfg(feature = "metrics")]
    if allowed {
        named.exported.record_wait(waited);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = waited;
}

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

    /// The name given by [`named`](Self::named), if any.
    pub fn name(&self) -> Option<&str> {
        name_of(&self.named)
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
