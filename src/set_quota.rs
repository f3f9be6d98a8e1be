//! `Limiter::set_quota`: changing a limiter's quota while checks run.
//!
//! The change is one compare-and-swap of the live bucket's word (`quota_cells.rs`): every
//! check, give-back and reservation decides either entirely before it, with the old quota on
//! the old TAT, or entirely after it, with the new quota on the TAT the [`QuotaChange`] rule
//! gives. No check takes a lock or waits for a change.

use crate::at::At;
use crate::clock::Clock;
use crate::limiter::Limiter;
use crate::nanos::Nanos;
use crate::quota::Quota;
use crate::quota_change::QuotaChange;

impl<C: Clock> Limiter<C> {
    /// Changes the quota now, carrying the bucket over by the rule `how` (see [`QuotaChange`]).
    ///
    /// Atomic with respect to every check, give-back and reservation: each decides on the
    /// bucket either before the change (old quota, old TAT) or after it (new quota, carried-over
    /// TAT). Reservations booked before it keep their ready times, and the change gives no one
    /// the time they were booked into ([`QuotaChange`]); cancelling or settling one lower after
    /// the change gives nothing back, and settling one higher spends the extra tokens under the
    /// new quota. The limiter keeps reading its clock as it was built to (see
    /// [`with_clock`](Self::with_clock)).
    ///
    /// ```
    /// use cellrate::{Limiter, ManualClock, Quota, QuotaChange};
    ///
    /// let limiter = Limiter::with_clock(Quota::per_second(10), ManualClock::new());
    /// limiter.check_n(4).unwrap(); // 6 of 10 left
    /// limiter.set_quota(Quota::per_second(100), QuotaChange::KeepSpent);
    /// assert_eq!(limiter.available(), 96); // 4 of 100 spent
    /// limiter.set_quota(Quota::per_second(2), QuotaChange::KeepSpent);
    /// assert_eq!(limiter.available(), 0); // 4 spent, capped at the new burst of 2
    /// ```
    ///
    /// A change allocates nothing, however often the quota changes.
    pub fn set_quota(&self, quota: Quota, how: QuotaChange) {
        self.set_quota_as(quota, how, self.reading().now(self.clock()))
    }

    /// [`set_quota`](Self::set_quota) at `now`: the instant at which the rule `how` converts
    /// the bucket. A TAT the new quota would place past the end of the clock stops one
    /// nanosecond short of it (a bucket that is then empty for good).
    pub(crate) fn set_quota_as(&self, quota: Quota, how: QuotaChange, now: Nanos) {
        let now = now.as_u64();
        self.cells()
            .change(quota, |tat, old| how.rebase(tat, now, old, &quota))
    }
}

/// [`Limiter::at`]: a quota change at a time passed in.
impl<C: Clock> At<'_, Limiter<C>> {
    /// [`Limiter::set_quota`] at this time: the instant at which the rule `how` converts the
    /// bucket.
    pub fn set_quota(&self, quota: Quota, how: QuotaChange) {
        self.of.set_quota_as(quota, how, self.now)
    }
}
