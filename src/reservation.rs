//! Reservations: book tokens now, use them when they arrive (docs/design.md §4).

use crate::at::At;
use crate::clock::Clock;
use crate::engine::bucket_ref::{BucketRef, TatStore};
use crate::engine::gcra;
use crate::engine::give_back::Receipt;
use crate::limiter::Limiter;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;
use core::time::Duration;

/// Tokens booked on a [`Limiter`] or on one key of a [`KeyedLimiter`](crate::KeyedLimiter),
/// ready at [`Reservation::ready_at`].
///
/// A reservation is used once: dropping it keeps the booking (so forgetting one never admits
/// more than the limit), [`cancel`](Self::cancel) gives the tokens back and
/// [`settle`](Self::settle) corrects the cost. One that does not wait (`max_wait` zero) is a
/// check that can be taken back. To settle it where its borrow cannot go (a spawned task),
/// [`detach`](Self::detach) it into a [`Ticket`] and [`attach`](Limiter::attach) that there.
///
/// ```
/// use cellrate::{Limiter, ManualClock, Nanos, Quota};
/// use std::time::Duration;
///
/// let limiter = Limiter::with_clock(Quota::per_second(10).with_burst(1), ManualClock::new());
/// let first = limiter.reserve(1, Duration::from_secs(1)).unwrap();
/// let second = limiter.reserve(1, Duration::from_secs(1)).unwrap();
/// assert_eq!(first.ready_at(), Nanos::ZERO);
/// assert_eq!(second.ready_at(), Nanos::new(100_000_000)); // one emission interval later
/// // A wait longer than max_wait is refused and books nothing.
/// assert!(limiter.reserve(1, Duration::from_millis(150)).is_err());
/// ```
#[must_use = "a reservation says when its tokens are ready; dropping it keeps the booking"]
pub struct Reservation<'a, C: Clock + ?Sized> {
    bucket: BucketRef<'a, C>,
    booked: Booked,
    allowed: Allowed,
}

/// A [`Reservation`] detached from its limiter: `'static` and `Send`, for where a borrow
/// cannot go. Not `Clone`: [`attach`](Limiter::attach) on the limiter that issued it turns it
/// back into the one reservation it was.
///
/// A ticket moves into its give-back, so a booking cannot be given back twice:
///
/// ```compile_fail,E0382
/// use cellrate::{Limiter, ManualClock, Quota};
/// use std::time::Duration;
///
/// let limiter = Limiter::with_clock(Quota::per_second(10), ManualClock::new());
/// let ticket = limiter.reserve(5, Duration::ZERO).unwrap().detach();
/// limiter.attach(ticket).unwrap().cancel();
/// limiter.attach(ticket).unwrap().cancel(); // error[E0382]: use of moved value
/// ```
#[derive(Debug)]
pub struct Ticket {
    /// The limiter it was booked on (its store's [`TatStore::origin`]).
    origin: u64,
    /// The bucket's id in its store (a keyed limiter's fingerprint).
    id: u64,
    quota: Quota,
    start_empty: bool,
    booked: Booked,
}

/// What a booking holds: its cost, when its tokens are ready, and its receipt.
#[derive(Debug)]
struct Booked {
    cost: u32,
    ready_at: Nanos,
    receipt: Receipt,
}

impl<C: Clock + ?Sized> core::fmt::Debug for Reservation<'_, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Reservation")
            .field("cost", &self.booked.cost)
            .field("ready_at", &self.booked.ready_at)
            .field("allowed", &self.allowed)
            .finish_non_exhaustive()
    }
}

impl<'a, C: Clock + ?Sized> Reservation<'a, C> {
    /// Books `cost` tokens of `bucket` at `now`, ready within `max_wait`.
    pub(crate) fn book(
        bucket: BucketRef<'a, C>,
        cost: u32,
        max_wait: Duration,
        now: Nanos,
    ) -> Result<Self, Denied> {
        let max_wait_ns = u64::try_from(max_wait.as_nanos()).unwrap_or(u64::MAX);
        let max_wait_ns = gcra::max_wait_ns(max_wait_ns, &bucket.quota);
        let (receipt, booking) = bucket.book(cost, now.as_u64(), max_wait_ns)?;
        let booked = Booked {
            cost,
            ready_at: Nanos::new(booking.ready_at),
            receipt,
        };
        Ok(Reservation {
            bucket,
            booked,
            allowed: booking.allowed,
        })
    }

    /// The reservation of `ticket` on the limiter whose bucket `bucket_of` gives for the
    /// ticket's id, quota and start; the ticket back if it is another limiter's.
    pub(crate) fn attach(
        ticket: Ticket,
        store: &'a dyn TatStore,
        bucket_of: impl FnOnce(u64, Quota, bool) -> BucketRef<'a, C>,
    ) -> Result<Self, Ticket> {
        if ticket.origin != store.origin() {
            return Err(ticket);
        }
        let bucket = bucket_of(ticket.id, ticket.quota, ticket.start_empty);
        let ahead = ticket
            .booked
            .receipt
            .after
            .saturating_sub(bucket.now().as_u64());
        let allowed = Allowed::new(gcra::level(ahead, &ticket.quota));
        Ok(Reservation {
            bucket,
            booked: ticket.booked,
            allowed,
        })
    }

    #[cfg(feature = "std")] // only the waits need it
    pub(crate) fn bucket(&self) -> &BucketRef<'a, C> {
        &self.bucket
    }

    /// The same booking as a [`Ticket`]: the tokens stay booked.
    pub fn detach(self) -> Ticket {
        Ticket {
            origin: self.bucket.store.origin(),
            id: self.bucket.id,
            quota: self.bucket.quota,
            start_empty: self.bucket.start_empty,
            booked: self.booked,
        }
    }

    /// The booking's receipt, for the broken give-backs of the loom models.
    #[cfg(all(test, loom))]
    pub(crate) fn receipt(&self) -> Receipt {
        self.booked.receipt
    }

    /// The instant the booked tokens are there (on the limiter's clock).
    pub fn ready_at(&self) -> Nanos {
        self.booked.ready_at
    }

    /// How long from the limiter's time now until [`ready_at`](Self::ready_at), or zero.
    pub fn ready_in(&self) -> Duration {
        self.booked
            .ready_at
            .saturating_duration_since(self.bucket.now())
    }

    /// The tokens this reservation booked.
    pub fn cost(&self) -> u32 {
        self.booked.cost
    }

    /// The bucket just after the booking (or, for a reservation [attached](Limiter::attach)
    /// again, the booking's figures now): `remaining` (0 while in debt) and `reset_after`.
    pub fn allowed(&self) -> Allowed {
        self.allowed
    }

    /// Gives the tokens back now, as [`cancel_at`](Self::cancel_at) does.
    pub fn cancel(self) {
        self.give_back(self.booked.cost, None);
    }

    /// Gives the tokens back at `now`. If nothing was booked, spent or given back on the bucket
    /// since, it returns to the state it had before the booking; otherwise at most the tokens
    /// the booking still holds (less those refilled before `now`, and nothing while a later
    /// booking may be waiting above it), which can leave the limit under-used, never exceeded.
    /// Nothing after a quota change, or once the key's bucket was removed (docs/design.md §5).
    ///
    /// `now` must be no earlier than a time any other operation on the bucket has used: a
    /// give-back at an earlier time would hand back tokens that a later spend found refilled.
    pub fn cancel_at(self, now: Nanos) {
        self.give_back(self.booked.cost, Some(now));
    }

    /// Settles the reservation now at its actual cost (reserve an estimate, settle the real
    /// figure, e.g. the tokens of an LLM reply), as [`settle_at`](Self::settle_at) does.
    pub fn settle(self, actual: u32) -> Result<(), Denied> {
        self.settle_as(actual, None)
    }

    /// Settles at `now`, once the work is done: a lower actual cost gives the difference back
    /// as [`cancel_at`](Self::cancel_at) does; a higher one spends the difference
    /// unconditionally, into debt if need be, in the bucket as it is now. A settle before
    /// [`ready_at`](Self::ready_at) gives nothing back: the work cannot have used tokens not
    /// there yet ([`cancel`](Self::cancel) a booking that will not be used).
    ///
    /// # Errors
    /// Only when the extra tokens cannot be charged: the key's bucket of a
    /// [`KeyedLimiter`](crate::KeyedLimiter) was removed since the booking and the table has no
    /// room to make it again. Nothing is charged then, and the refusal says when room comes. A
    /// [`Limiter`] always charges them.
    pub fn settle_at(self, actual: u32, now: Nanos) -> Result<(), Denied> {
        self.settle_as(actual, Some(now))
    }

    fn settle_as(self, actual: u32, at: Option<Nanos>) -> Result<(), Denied> {
        let cost = self.booked.cost;
        if actual < cost {
            // Before `ready_at` the tokens are not there to have been used (see `settle_at`).
            if self.bucket.time(at) >= self.booked.ready_at {
                self.give_back(cost - actual, at);
            }
            Ok(())
        } else if actual > cost {
            let now = self.bucket.time(at);
            self.bucket
                .force(actual - cost, now.as_u64())
                .map_err(|denied| self.bucket.lagged(at, denied))
        } else {
            Ok(())
        }
    }

    fn give_back(&self, tokens: u32, at: Option<Nanos>) {
        self.bucket.give_back(&self.booked.receipt, tokens, at);
    }
}

impl<C: Clock> Limiter<C> {
    /// Books `cost` tokens now, even if they only arrive later, provided the wait is at most
    /// `max_wait`; a longer wait, or `cost > burst`, is refused and books nothing.
    pub fn reserve(&self, cost: u32, max_wait: Duration) -> Result<Reservation<'_, C>, Denied> {
        self.reserve_as(cost, max_wait, None)
    }

    pub(crate) fn reserve_as(
        &self,
        cost: u32,
        max_wait: Duration,
        at: Option<Nanos>,
    ) -> Result<Reservation<'_, C>, Denied> {
        let bucket = self.bucket_ref();
        Reservation::book(bucket.clone(), cost, max_wait, bucket.time(at))
            .map_err(|denied| bucket.lagged(at, denied))
    }

    /// The reservation of a [`Ticket`] this limiter issued, to cancel or settle it; the ticket
    /// back if another limiter issued it.
    ///
    /// ```
    /// use cellrate::{Limiter, ManualClock, Quota};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let limiter = Arc::new(Limiter::with_clock(Quota::per_second(100), ManualClock::new()));
    /// let ticket = limiter.reserve(10, Duration::ZERO).unwrap().detach();
    /// let shared = Arc::clone(&limiter);
    /// std::thread::spawn(move || shared.attach(ticket).unwrap().settle(4)) // the real cost
    ///     .join()
    ///     .unwrap()
    ///     .unwrap();
    /// assert_eq!(limiter.available(), 96);
    /// ```
    pub fn attach(&self, ticket: Ticket) -> Result<Reservation<'_, C>, Ticket> {
        Reservation::attach(ticket, self.cells(), |_, _, _| self.bucket_ref())
    }
}

/// [`Limiter::at`]: a booking at a time passed in.
impl<'a, C: Clock> At<'a, Limiter<C>> {
    /// [`Limiter::reserve`] at this time.
    pub fn reserve(&self, cost: u32, max_wait: Duration) -> Result<Reservation<'a, C>, Denied> {
        self.of.reserve_as(cost, max_wait, Some(self.now))
    }
}
