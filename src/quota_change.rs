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
//! - tokens booked beyond an empty bucket (reservations in line, a settled overrun) are
//!   `debt = spent - burst_old` when positive. Every strategy but the resets carries the debt
//!   over as tokens of the new quota, so a reservation made before the change keeps its place
//!   and nobody can book a slot that overlaps it.

use crate::engine::gcra;
use crate::quota::Quota;

/// How a bucket's state is carried over when its quota changes: by
/// [`Limiter::set_quota`](crate::Limiter::set_quota), or for one key by
/// [`KeyedBucket::rebase_from`](crate::KeyedBucket::rebase_from).
///
/// The default, [`KeepSpent`](QuotaChange::KeepSpent), never turns a downgrade into a wait
/// longer than the new quota's depth (tokens booked ahead aside, which keep their place), and
/// keeps a full bucket full, as a key the keyed limiter no longer holds is.
///
/// ```
/// use cellrate::{KeyedLimiter, ManualClock, QuotaChange, Quota};
///
/// let free = Quota::per_second(1).with_burst(10);
/// let pro = Quota::per_second(50).with_burst(500);
/// let limiter = KeyedLimiter::<u64, _>::with_clock(free, ManualClock::new());
/// assert!(limiter.key(&1).check_n(7).is_ok()); // 3 of 10 left
/// let upgraded = limiter.key(&1).with_quota(&pro);
/// upgraded.rebase_from(&free, QuotaChange::KeepSpent);
/// assert_eq!(upgraded.available(), 493); // 7 of 500 spent
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
    /// The TAT is kept as it is: the instant the bucket is full again does not move. What a
    /// per-call quota ([`KeyedBucket::with_quota`](crate::KeyedBucket::with_quota))
    /// does when a key is checked under another quota than before.
    KeepTime,
    /// The bucket is full (Bucket4j's `RESET`); bookings ahead are forgotten.
    Full,
    /// The bucket is empty: full again one depth of the new quota later; bookings ahead are
    /// forgotten.
    Empty,
}

impl QuotaChange {
    /// The TAT that a bucket at `tat` has at `now` after moving from quota `old` to `new`.
    /// At most [`gcra::MAX_AHEAD`] past `now`, like every write of a TAT.
    pub(crate) fn rebase(self, tat: u64, now: u64, old: &Quota, new: &Quota) -> u64 {
        let used = tat.saturating_sub(now);
        if used == 0 && self != QuotaChange::Empty {
            return tat; // full under any quota
        }
        let (t_old, t_new) = (old.emission_interval_ns(), new.emission_interval_ns());
        let spent = used.div_ceil(t_old);
        let debt = spent.saturating_sub(u64::from(old.burst()));
        let in_bucket = spent - debt; // at most the old burst
        let new_burst = u64::from(new.burst());
        let spent_new = match self {
            QuotaChange::KeepTime => return tat,
            QuotaChange::Full => return tat.min(now),
            QuotaChange::Empty => return gcra::empty_at(now, new),
            QuotaChange::KeepAvailable => {
                let available = u64::from(old.burst()) - in_bucket;
                new_burst - available.min(new_burst)
            }
            QuotaChange::KeepSpent => in_bucket.min(new_burst),
            QuotaChange::Proportional => {
                // in_bucket / burst_old of the new burst, rounded up.
                let scaled = u128::from(in_bucket) * u128::from(new_burst);
                let whole = scaled.div_ceil(u128::from(old.burst()));
                u64::try_from(whole).unwrap_or(u64::MAX).min(new_burst)
            }
        };
        let tokens = spent_new.saturating_add(debt);
        // No write places a TAT more than `MAX_AHEAD` past its `now` (gcra.rs).
        let ahead = tokens.saturating_mul(t_new).min(gcra::MAX_AHEAD);
        now.saturating_add(ahead)
    }
}
