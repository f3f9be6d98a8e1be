//! Reservations: book tokens now, use them when they arrive.
//!
//! A GCRA TAT is a queue position. Reserving `cost` tokens moves it exactly as a spend would,
//! with one CAS, even when the tokens only arrive in the future; the reservation says when. So
//! each reserver gets its own slot in arrival order: waiters wake one at a time, spaced by the
//! emission interval, with no retry loop and no thundering herd.

use crate::bucket::Change;
use crate::bucket_ref::{BucketRef, TatStore};
use crate::clock::{lagged_now, Clock};
use crate::gcra;
use crate::limiter::Limiter;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;
#[cfg(feature = "std")]
use alloc::sync::Arc;
use core::time::Duration;

/// Tokens booked on a [`Limiter`] or on one key of a [`KeyedLimiter`](crate::KeyedLimiter),
/// ready at [`Reservation::ready_at`].
///
/// Dropping a reservation keeps the booking (the caller is assumed to go ahead at `ready_at`);
/// [`Reservation::cancel`] gives the tokens back and [`Reservation::settle`] corrects the cost.
/// Forgetting a reservation therefore never admits more than the limit. Cancelling and settling
/// use the quota the tokens were booked under, whatever quota the bucket is checked with later.
///
/// A reservation borrows its limiter. To settle it in another task (reserve in a handler,
/// settle in `tokio::spawn` once the real cost is known), turn it into a
/// `Reservation<'static, C>` that keeps the limiter alive: [`Reservation::into_owned`] with the
/// `Arc` the limiter lives in, or [`Limiter::reserve_n_owned`] directly.
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
    holder: Holder<'a, C>,
    id: u64,
    quota: Quota,
    start_empty: bool,
    cost: u32,
    ready_at: Nanos,
    change: Change,
    allowed: Allowed,
}

/// Where the reserved bucket lives: in a limiter the reservation borrows, or in one it keeps
/// alive.
enum Holder<'a, C: Clock> {
    Borrowed {
        store: &'a dyn TatStore,
        clock: &'a C,
    },
    #[cfg(feature = "std")]
    Owned(Arc<dyn owner::Owner<C> + Send + Sync>),
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

pub(crate) mod owner {
    use crate::bucket_ref::TatStore;

    /// What [`BucketOwner`](super::BucketOwner) hides: the buckets and clock of a limiter.
    pub trait Owner<C> {
        /// Where the limiter's TATs live.
        fn store(&self) -> &dyn TatStore;
        /// The limiter's clock.
        fn clock(&self) -> &C;
    }
}

/// A limiter whose reservations can own it: [`Limiter`] and
/// [`KeyedLimiter`](crate::KeyedLimiter). Sealed; see [`Reservation::into_owned`].
pub trait BucketOwner<C>: owner::Owner<C> {}

impl<C: Clock> owner::Owner<C> for Limiter<C> {
    fn store(&self) -> &dyn TatStore {
        self.bucket_ref().store
    }

    fn clock(&self) -> &C {
        Limiter::clock(self)
    }
}

impl<C: Clock> BucketOwner<C> for Limiter<C> {}

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
            holder: Holder::Borrowed {
                store: bucket.store,
                clock: bucket.clock,
            },
            id: bucket.id,
            quota: bucket.quota,
            start_empty: bucket.start_empty,
            cost,
            ready_at: Nanos::new(booking.ready_at),
            change,
            allowed: booking.allowed,
        }
    }

    /// The reserved bucket, as booked.
    fn bucket(&self) -> BucketRef<'_, C> {
        let (store, clock): (&dyn TatStore, &C) = match &self.holder {
            Holder::Borrowed { store, clock } => (*store, *clock),
            #[cfg(feature = "std")]
            Holder::Owned(owner) => (owner.store(), owner.clock()),
        };
        BucketRef {
            store,
            id: self.id,
            quota: self.quota,
            clock,
            start_empty: self.start_empty,
        }
    }

    /// The same reservation, keeping `limiter` alive instead of borrowing it, so that it can
    /// be moved into a spawned task and settled there. `limiter` must be the `Arc` of the
    /// limiter the reservation was booked on; any other is refused, handing the reservation
    /// back unchanged.
    ///
    /// ```
    /// use cellrate::{KeyedLimiter, ManualClock, Quota};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let quota = Quota::per_second(100);
    /// let limiter = Arc::new(KeyedLimiter::<u64, _>::with_clock(quota, ManualClock::new()));
    /// let booked = limiter.key(&7).reserve_n(10, Duration::ZERO).unwrap();
    /// let owned = booked.into_owned(Arc::clone(&limiter)).unwrap();
    /// std::thread::spawn(move || owned.settle(4)) // the real cost, known later
    ///     .join()
    ///     .unwrap();
    /// assert_eq!(limiter.key(&7).available(), 96);
    /// ```
    #[cfg(feature = "std")]
    pub fn into_owned<L>(self, limiter: Arc<L>) -> Result<Reservation<'static, C>, Self>
    where
        L: BucketOwner<C> + Send + Sync + 'static,
    {
        let booked_on = self.bucket().store as *const dyn TatStore;
        if !core::ptr::addr_eq(booked_on, limiter.store() as *const dyn TatStore) {
            return Err(self);
        }
        Ok(self.owned_by(limiter))
    }

    /// The same reservation, holding `owner` (the limiter it was booked on).
    #[cfg(feature = "std")]
    fn owned_by(self, owner: Arc<dyn owner::Owner<C> + Send + Sync>) -> Reservation<'static, C> {
        Reservation {
            holder: Holder::Owned(owner),
            id: self.id,
            quota: self.quota,
            start_empty: self.start_empty,
            cost: self.cost,
            ready_at: self.ready_at,
            change: self.change,
            allowed: self.allowed,
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
        self.ready_in_at(self.bucket().now())
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
        let now = self.bucket().now();
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
        let bucket = self.bucket();
        if !bucket.restore(self.change) {
            bucket.unbook(self.change, self.cost, now.as_u64());
        }
    }

    /// Deliberately broken `cancel_at`: restores the old TAT blindly. Only for the loom models.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn cancel_racy(self) {
        self.bucket().restore_racy(self.change)
    }

    /// Settles the reservation at its actual cost (two-phase use: reserve an estimate, settle
    /// the real figure, e.g. the tokens of an LLM reply). See [`Reservation::settle_at`].
    pub fn settle(self, actual: u32) {
        let now = self.bucket().now();
        self.settle_at(actual, now)
    }

    /// Settles at `now`: a lower actual cost gives the difference back by the rule of
    /// [`Reservation::cancel_at`] (so exactly, if nothing was booked since); a higher one spends
    /// the difference unconditionally, since the work is already done, so the bucket may go
    /// into debt that later requests wait out.
    pub fn settle_at(self, actual: u32, now: Nanos) {
        let (bucket, now) = (self.bucket(), now.as_u64());
        if actual < self.cost {
            bucket.unbook(self.change, self.cost - actual, now);
        } else if actual > self.cost {
            bucket.force(actual - self.cost, now);
        }
    }
}

impl<C: Clock> Limiter<C> {
    /// Books `cost` tokens now, even if they only arrive later, provided the wait is at most
    /// `max_wait`. A longer wait is refused and books nothing; so is `cost > burst` (with
    /// [`Denied::retry_after`] `None`), which could never be served.
    pub fn reserve_n(&self, cost: u32, max_wait: Duration) -> Result<Reservation<'_, C>, Denied> {
        self.reserve_n_at(cost, max_wait, self.clock().now())
            .map_err(|denied| lagged_now(self.clock(), denied))
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

    /// [`Limiter::reserve_n`], returning a reservation that keeps the limiter alive (see
    /// [`Reservation::into_owned`]).
    #[cfg(feature = "std")]
    pub fn reserve_n_owned(
        self: &Arc<Self>,
        cost: u32,
        max_wait: Duration,
    ) -> Result<Reservation<'static, C>, Denied>
    where
        C: Send + Sync + 'static,
    {
        Ok(self.reserve_n(cost, max_wait)?.owned_by(self.clone()))
    }
}
