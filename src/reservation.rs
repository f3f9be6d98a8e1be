//! Reservations: book tokens now, use them when they arrive.
//!
//! A GCRA TAT is a queue position. Reserving `cost` tokens moves it exactly as a spend would,
//! with one CAS, even when the tokens only arrive in the future; the reservation says when. So
//! each reserver gets its own slot in arrival order: waiters wake one at a time, spaced by the
//! emission interval, with no retry loop and no thundering herd.

use crate::bucket::Change;
use crate::bucket_ref::BucketRef;
use crate::clock::Clock;
use crate::gcra;
use crate::limiter::Limiter;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use core::time::Duration;

/// Tokens booked on a [`Limiter`] or on one key of a [`KeyedLimiter`](crate::KeyedLimiter),
/// ready at [`Reservation::ready_at`].
///
/// Dropping a reservation keeps the booking (the caller is assumed to go ahead at `ready_at`);
/// [`Reservation::cancel`] gives the tokens back and [`Reservation::settle`] corrects the cost.
/// Forgetting a reservation therefore never admits more than the limit.
///
/// ```
/// use cellrate::{Limiter, ManualClock, Nanos, Quota};
/// use std::time::Duration;
///
/// let limiter = Limiter::with_clock(Quota::per_second(10).with_burst(1), ManualClock::new());
/// let first = limiter.reserve_n_at(1, Duration::from_secs(1), Nanos::ZERO).unwrap();
/// let second = limiter.reserve_n_at(1, Duration::from_secs(1), Nanos::ZERO).unwrap();
/// assert_eq!(first.ready_at(), Nanos::ZERO);
/// assert_eq!(second.ready_at(), Nanos::new(100_000_000)); // one emission interval later
/// // A wait longer than max_wait is refused and books nothing.
/// assert!(limiter.reserve_n_at(1, Duration::from_millis(150), Nanos::ZERO).is_err());
/// ```
#[must_use = "a reservation says when its tokens are ready; dropping it keeps the booking"]
pub struct Reservation<'a, C: Clock> {
    bucket: BucketRef<'a, C>,
    cost: u32,
    ready_at: Nanos,
    change: Change,
    allowed: Allowed,
}

impl<C: Clock> core::fmt::Debug for Reservation<'_, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Reservation")
            .field("cost", &self.cost)
            .field("ready_at", &self.ready_at)
            .field("allowed", &self.allowed)
            .finish_non_exhaustive()
    }
}

impl<'a, C: Clock> Reservation<'a, C> {
    /// Books `cost` tokens of `bucket` at `now`, ready within `max_wait`: what every
    /// `reserve_n_at` does.
    pub(crate) fn book(
        bucket: BucketRef<'a, C>,
        cost: u32,
        max_wait: Duration,
        now: Nanos,
    ) -> Result<Self, Denied> {
        let max_wait_ns = u64::try_from(max_wait.as_nanos()).unwrap_or(u64::MAX);
        let max_wait_ns = gcra::max_wait_ns(max_wait_ns, &bucket.quota);
        let (change, booking) = bucket.book(cost, now.as_u64(), max_wait_ns)?;
        Ok(Reservation::new(bucket, cost, booking, change))
    }

    fn new(bucket: BucketRef<'a, C>, cost: u32, booking: gcra::Booking, change: Change) -> Self {
        Reservation {
            bucket,
            cost,
            ready_at: Nanos::new(booking.ready_at),
            change,
            allowed: booking.allowed,
        }
    }

    /// The instant the booked tokens are there (on the limiter's clock).
    pub fn ready_at(&self) -> Nanos {
        self.ready_at
    }

    /// How long to wait from `now` until [`Reservation::ready_at`] (zero if already there).
    pub fn ready_in_at(&self, now: Nanos) -> Duration {
        self.ready_at.saturating_duration_since(now)
    }

    /// How long to wait from the limiter's clock's current time until
    /// [`Reservation::ready_at`] (zero if already there).
    pub fn ready_in(&self) -> Duration {
        self.ready_in_at(self.bucket.now())
    }

    /// The tokens this reservation booked.
    pub fn cost(&self) -> u32 {
        self.cost
    }

    /// The bucket just after the booking: `remaining` (0 while in debt) and `reset_after`.
    pub fn allowed(&self) -> Allowed {
        self.allowed
    }

    /// Keeps the booking; the same as dropping the reservation, but says so.
    pub fn commit(self) -> Allowed {
        self.allowed
    }

    /// Gives the tokens back now. See [`Reservation::cancel_at`].
    pub fn cancel(self) {
        let now = self.bucket.now();
        self.cancel_at(now)
    }

    /// Gives the tokens back at `now`. What is restored, exactly:
    /// - if nothing was booked or spent on the limiter since, the bucket returns to exactly
    ///   the state it had before the reservation, as if it had never been made;
    /// - if only refunds happened since, `cost` tokens come back (never beyond a full bucket);
    /// - if anything was booked or spent after it, nothing comes back. Later reservations
    ///   keep the times they were given, and returning tokens underneath them would let a new
    ///   booking take a slot that overlaps theirs, admitting more than the limit. A
    ///   cancellation can leave the limit under-used, never exceeded.
    pub fn cancel_at(self, now: Nanos) {
        if !self.bucket.restore(self.change) {
            self.bucket.unbook(self.change, self.cost, now.as_u64());
        }
    }

    /// Deliberately broken `cancel_at`: restores the old TAT blindly. Only for the loom models.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn cancel_racy(self) {
        self.bucket.restore_racy(self.change)
    }

    /// Settles the reservation at its actual cost (two-phase use: reserve an estimate, settle
    /// the real figure, e.g. the tokens of an LLM reply). See [`Reservation::settle_at`].
    pub fn settle(self, actual: u32) {
        let now = self.bucket.now();
        self.settle_at(actual, now)
    }

    /// Settles at `now`: a lower actual cost gives the difference back by the rule of
    /// [`Reservation::cancel_at`] (so exactly, if nothing was booked since); a higher one spends
    /// the difference unconditionally, since the work is already done, so the bucket may go
    /// into debt that later requests wait out.
    pub fn settle_at(self, actual: u32, now: Nanos) {
        let now = now.as_u64();
        if actual < self.cost {
            self.bucket.unbook(self.change, self.cost - actual, now);
        } else if actual > self.cost {
            self.bucket.force(actual - self.cost, now);
        }
    }
}

impl<C: Clock> Limiter<C> {
    /// Books `cost` tokens now, even if they only arrive later, provided the wait is at most
    /// `max_wait`. A longer wait is refused and books nothing; so is `cost > burst` (with
    /// [`Denied::retry_after`] `None`), which could never be served.
    pub fn reserve_n(&self, cost: u32, max_wait: Duration) -> Result<Reservation<'_, C>, Denied> {
        self.reserve_n_at(cost, max_wait, self.clock().now())
    }

    /// [`Limiter::reserve_n`] at a time passed in.
    pub fn reserve_n_at(
        &self,
        cost: u32,
        max_wait: Duration,
        now: Nanos,
    ) -> Result<Reservation<'_, C>, Denied> {
        Reservation::book(self.bucket_ref(), cost, max_wait, now)
    }
}
