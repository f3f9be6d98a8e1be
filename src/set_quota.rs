//! `Limiter::set_quota`: changing a limiter's quota while checks run (docs/design.md §10).

use crate::at::At;
use crate::clock::Clock;
use crate::limiter::Limiter;
use crate::nanos::Nanos;
use crate::quota::Quota;
use crate::quota_change::QuotaChange;

impl<C: Clock> Limiter<C> {
    /// Changes the quota now, carrying the bucket over by the rule `how` (see [`QuotaChange`]).
    ///
    /// Atomic with respect to every check, give-back and reservation: each decides either
    /// before the change (old quota, old TAT) or after it (new quota, carried-over TAT); no
    /// check waits for it, and it allocates nothing. Reservations booked before it keep their
    /// ready times ([`QuotaChange`]); cancelling or settling one lower after the change gives
    /// nothing back, and settling one higher spends the extra under the new quota.
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
    pub fn set_quota(&self, quota: Quota, how: QuotaChange) {
        self.set_quota_as(quota, how, self.reading().now(self.clock()))
    }

    /// [`set_quota`](Self::set_quota) at `now`, the instant at which `how` converts the bucket.
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
