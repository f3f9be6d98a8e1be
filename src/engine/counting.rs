//! What a named limiter counts: its name, its [`Tally`] of decisions and, with the `metrics`
//! feature, what it has published (docs/design.md §11).

use super::tally::Tally;
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

    pub(crate) fn fill(&self, stats: &mut Stats) {
        let t = self.tally.totals();
        stats.allowed = t.allowed;
        stats.denied = t.denied;
        stats.peeks = t.peeks;
    }
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
#[inline]
pub(crate) fn count(named: &Option<Box<Named>>, cost: u32, decision: &Result<Allowed, Denied>) {
    if let Some(named) = named {
        named.record(cost, decision);
    }
}

/// Counts a completed wait (or a paced item handed on) if the limiter is named: allowed once
/// its tokens were there, denied if refused; with `metrics` an allowed one records `waited`.
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
