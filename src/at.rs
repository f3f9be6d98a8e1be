//! `At`: a limiter read at a time passed in, `limiter.at(now)`: one clock reading for a batch
//! of operations, or a time from a clock of the caller's own.

use crate::clock::Clock;
use crate::limiter::Limiter;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;
use crate::quota_change::QuotaChange;
use crate::reservation::Reservation;
use core::time::Duration;

/// A limiter (or a keyed limiter) at the time `now`, from [`Limiter::at`] and
/// [`KeyedLimiter::at`](crate::KeyedLimiter::at): the same operations as on the limiter, each
/// at `now` instead of a reading of the limiter's clock. Refusals carry no clock lag in their
/// `retry_after`: the time is the caller's. Cheap to make and to copy.
///
/// Pass times from one clock for one limiter, no earlier than any time its bucket has already
/// seen: an earlier `now` is answered as of that instant, which can deny what a later time
/// would pass, and never grants more.
///
/// ```
/// use cellrate::{Clock, Limiter, ManualClock, Nanos, Quota};
///
/// let limiter = Limiter::with_clock(Quota::per_second(10), ManualClock::new());
/// let now = limiter.clock().now(); // one reading for several checks
/// assert!(limiter.at(now).check_n(4).is_ok());
/// assert_eq!(limiter.at(now).available(), 6);
/// assert_eq!(limiter.at(Nanos::new(200_000_000)).available(), 8);
/// ```
#[derive(Debug)]
pub struct At<'a, L> {
    pub(crate) of: &'a L,
    pub(crate) now: Nanos,
}

impl<L> Clone for At<'_, L> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<L> Copy for At<'_, L> {}

impl<'a, L> At<'a, L> {
    /// `of` at `now`.
    #[inline]
    pub(crate) fn new(of: &'a L, now: Nanos) -> Self {
        At { of, now }
    }

    /// The time this view decides at.
    #[inline]
    pub fn now(&self) -> Nanos {
        self.now
    }
}

impl<'a, C: Clock> At<'a, Limiter<C>> {
    /// [`Limiter::check`] at this time.
    #[inline]
    pub fn check(&self) -> Result<Allowed, Denied> {
        self.of.spend(1, self.now)
    }

    /// [`Limiter::check_n`] at this time.
    #[inline]
    pub fn check_n(&self, cost: u32) -> Result<Allowed, Denied> {
        self.of.spend(cost, self.now)
    }

    /// [`Limiter::available`] at this time.
    #[inline]
    pub fn available(&self) -> u32 {
        self.of.available_at(self.now)
    }

    /// [`Limiter::reserve`] at this time.
    pub fn reserve(&self, cost: u32, max_wait: Duration) -> Result<Reservation<'a, C>, Denied> {
        self.of.reserve_as(cost, max_wait, Some(self.now))
    }

    /// [`Limiter::set_quota`] at this time: the instant at which the rule `how` converts the
    /// bucket.
    pub fn set_quota(&self, quota: Quota, how: QuotaChange) {
        self.of.set_quota_as(quota, how, self.now)
    }
}
