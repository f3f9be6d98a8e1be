//! `At`: a limiter at a time passed in, `limiter.at(now)`.

use crate::nanos::Nanos;

/// A limiter (or a keyed limiter) at the time `now`, from [`Limiter::at`](crate::Limiter::at)
/// and [`KeyedLimiter::at`](crate::KeyedLimiter::at): the same operations, each at `now`
/// instead of a reading of the limiter's clock (one reading for a batch, or a clock of your
/// own). Refusals carry no clock lag. Pass times from one clock; an earlier `now` than one the
/// bucket has seen can deny what a later time would pass, and never grants more.
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
    #[inline]
    pub(crate) fn new(of: &'a L, now: Nanos) -> Self {
        At { of, now }
    }
}
