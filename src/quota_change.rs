//! `QuotaChange`: what a bucket holds after its quota changes.
//!
//! A TAT means "full at this instant" under any quota, so a bucket can move to another quota
//! without a conversion ([`QuotaChange::KeepTime`]). That is rarely what a user means by
//! "the same bucket under the new limit": a key that drained a large tier and drops to a small
//! one would wait for the large tier's whole depth. The strategies below carry over what the
//! user means instead (the tokens still available, the tokens spent, the fraction of the bucket
//! used) and are the ones Bucket4j and Go's `x/time/rate` users know. Each is a pure function of
//! the TAT, the time and the two quotas, in integer nanoseconds:
//!
//! - `used = max(TAT - now, 0)` under the old quota, and `spent = ceil(used / T_old)` tokens
//!   (rounded up: a conversion never grants a fraction of a token);
//! - a bucket that holds more than its depth (`used > D_old`) has reservations waiting for
//!   their tokens (or a settled overrun to wait out). They keep the times they were given,
//!   worked out under the old quota, so the change takes effect when the last of them is ready,
//!   at `s = TAT - D_old`, and the bucket is then empty under the new quota: `TAT = s + D_new`
//!   (for [`QuotaChange::KeepTime`], the TAT if later). Nothing decided under the new quota is
//!   ready before `s`, so no one is given the interval the bookings were timed into, whatever
//!   the rule, upgrades included. (A bucket left over a shallower depth by `KeepTime`, or by a
//!   settle above its booking, is read the same way by the next change: it cannot be told
//!   apart from one with bookings waiting.)

use crate::engine::gcra;
use crate::quota::Quota;

/// How a [`Limiter`](crate::Limiter)'s bucket is carried over when
/// [`set_quota`](crate::Limiter::set_quota) changes its quota.
///
/// The default, [`KeepSpent`](QuotaChange::KeepSpent), never turns a downgrade into a wait
/// longer than the new quota's depth, and keeps a full bucket full. Whatever the rule,
/// reservations still waiting keep their times: the change takes effect once the last of them
/// is ready, with the bucket empty then (module docs).
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
    /// reservations wait: module docs).
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
            // Reservations wait (module docs): the change takes effect as the last is ready.
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
