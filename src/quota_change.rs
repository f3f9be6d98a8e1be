//! `QuotaChange`: what a bucket holds after its quota changes. Each rule is a pure function of
//! the TAT, the time and the two quotas (docs/design.md §10, with why bookings keep their
//! place whatever the rule).

use crate::engine::gcra;
use crate::quota::Quota;

/// How a [`Limiter`](crate::Limiter)'s bucket is carried over when
/// [`set_quota`](crate::Limiter::set_quota) changes its quota.
///
/// The default, [`KeepSpent`](QuotaChange::KeepSpent), never turns a downgrade into a wait
/// longer than the new quota's depth, and keeps a full bucket full. Whatever the rule,
/// reservations still waiting keep their times: the change takes effect once the last of them
/// is ready, with the bucket empty then.
///
/// ```
/// use cellrate::{Limiter, ManualClock, QuotaChange, Quota};
///
/// let limiter = Limiter::with_clock(Quota::per_second(1).with_burst(10), ManualClock::new());
/// assert!(limiter.check_n(7).is_ok()); // 3 of 10 left
/// limiter.set_quota(Quota::per_second(50).with_burst(500), QuotaChange::KeepSpent);
/// assert_eq!(limiter.available(), 493); // 7 of 500 spent
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QuotaChange {
    /// The tokens spent stay spent, capped at the new burst: an upgrade makes its extra room
    /// available at once (3 left of 10 become 493 of 500), a downgrade keeps the spending
    /// (3 left of 500 become 0 of 10, full again one depth of the new quota later).
    #[default]
    KeepSpent,
    /// The tokens available stay available, capped at the new burst (Bucket4j's `AS_IS`, Go's
    /// `SetLimit`): 3 tokens left of 10 are 3 tokens left of 500. A full bucket stays full.
    KeepAvailable,
    /// The bucket stays as full in proportion (Bucket4j's `PROPORTIONALLY`): a third full stays
    /// a third full.
    Proportional,
    /// The TAT is kept as it is: the instant the bucket is full again does not move (unless
    /// reservations wait).
    KeepTime,
    /// The bucket is full (Bucket4j's `RESET`).
    Full,
    /// The bucket is empty: full again one depth of the new quota later.
    Empty,
}

impl QuotaChange {
    /// The TAT that a bucket at `tat` has at `now` after moving from quota `old` to `new`.
    /// At most [`gcra::MAX_AHEAD`] past `now`, like every write of a TAT.
    pub(crate) fn rebase(self, tat: u64, now: u64, old: &Quota, new: &Quota) -> u64 {
        // Never before `now`: the change happens at its reading, and an operation after it on
        // an earlier reading is answered as of the change, not under the new quota earlier.
        self.carry(tat, now, old, new).max(now)
    }

    /// [`rebase`](Self::rebase) before it is kept from going below `now`.
    fn carry(self, tat: u64, now: u64, old: &Quota, new: &Quota) -> u64 {
        let used = tat.saturating_sub(now);
        if used > old.depth_ns() {
            // Reservations wait: the change takes effect as the last is ready.
            let ready = tat - old.depth_ns();
            let cap = now.saturating_add(gcra::MAX_AHEAD).max(tat);
            let empty_then = ready.saturating_add(new.depth_ns()).min(cap);
            return match self {
                // The TAT is kept, but not before the bookings are ready: a change to a deeper
                // quota would otherwise let new requests in ahead of them.
                QuotaChange::KeepTime => tat.max(empty_then),
                _ => empty_then,
            };
        }
        if used == 0 && self != QuotaChange::Empty {
            return tat; // full under any quota
        }
        let t_new = new.emission_interval_ns();
        let spent = used.div_ceil(old.emission_interval_ns()); // at most the old burst
        let new_burst = u64::from(new.burst());
        let spent_new = match self {
            QuotaChange::KeepTime => return tat,
            QuotaChange::Full => return now,
            QuotaChange::Empty => return gcra::empty_at(now, new),
            QuotaChange::KeepAvailable => {
                let available = u64::from(old.burst()) - spent.min(u64::from(old.burst()));
                new_burst - available.min(new_burst)
            }
            QuotaChange::KeepSpent => spent.min(new_burst),
            QuotaChange::Proportional => {
                // spent / burst_old of the new burst, rounded up.
                let scaled = u128::from(spent) * u128::from(new_burst);
                let whole = scaled.div_ceil(u128::from(old.burst()));
                u64::try_from(whole).unwrap_or(u64::MAX).min(new_burst)
            }
        };
        // At most the new depth ahead of `now`, which is at most `MAX_AHEAD` (gcra.rs).
        now.saturating_add(spent_new * t_new)
    }
}
