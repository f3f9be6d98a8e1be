//! `Limiter::set_quota`: changing a limiter's quota while checks run.
//!
//! The change is one compare-and-swap of the live bucket's word (`quota_cells.rs`): every
//! check, refund and reservation decides either entirely before it, with the old quota on the
//! old TAT, or entirely after it, with the new quota on the TAT the [`QuotaChange`] rule gives.
//! No check takes a lock or waits for a change.

use crate::clock::Clock;
use crate::limiter::Limiter;
use crate::nanos::Nanos;
use crate::quota::Quota;
use crate::quota_change::QuotaChange;

impl<C: Clock> Limiter<C> {
    /// Changes the quota now, carrying the bucket over by the rule `how` (see [`QuotaChange`]).
    ///
    /// The default rule, [`QuotaChange::KeepSpent`], keeps the tokens spent, capped at the new
    /// burst, so a downgrade never waits longer than the new quota's depth (tokens booked ahead
    /// by reservations aside, which keep their place).
    ///
    /// Atomic with respect to every check, refund and reservation: each decides on the bucket
    /// either before the change (old quota, old TAT) or after it (new quota, rebased TAT).
    /// Reservations booked before it keep their ready times; cancelling or settling one lower
    /// after the change gives nothing back (as when anything else was booked since), and
    /// settling one higher spends the extra tokens under the new quota.
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
    /// Each change keeps a few dozen bytes (the new quota's bucket) until the limiter is
    /// dropped: a stalled check may still read the old one, and no check pays to announce
    /// when it is done.
    pub fn set_quota(&self, quota: Quota, how: QuotaChange) {
        // The reading the new quota's operations will use (`clock::now_for`).
        self.set_quota_at(quota, how, crate::clock::now_for(self.clock(), &quota))
    }

    /// [`Limiter::set_quota`] with the limiter's time passed in: the instant at which the rule
    /// `how` converts the bucket. A TAT the new quota would place past the end of the clock
    /// stops one nanosecond short of it (a bucket that is then empty for good).
    pub fn set_quota_at(&self, quota: Quota, how: QuotaChange, now: Nanos) {
        let now = now.as_u64();
        self.cells()
            .change(quota, |tat, old| how.rebase(tat, now, old, &quota))
    }

    /// Deliberately broken [`Limiter::set_quota_at`]: rebases the TAT it loaded and stores the
    /// move without a compare-and-swap, so a check or a settle that lands in between is lost.
    /// Only for the loom models.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn set_quota_at_racy(&self, quota: Quota, how: QuotaChange, now: Nanos) {
        let now = now.as_u64();
        self.cells()
            .change_racy(quota, |tat, old| how.rebase(tat, now, old, &quota))
    }

    /// Deliberately broken [`Limiter::set_quota_at`]: makes the change without the change
    /// lock, so that two changes can write the same spare at once and publish `live` out of
    /// order. Only for the loom models.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn set_quota_at_unlocked(&self, quota: Quota, how: QuotaChange, now: Nanos) {
        let now = now.as_u64();
        self.cells()
            .change_unlocked(quota, |tat, old| how.rebase(tat, now, old, &quota))
    }
}
