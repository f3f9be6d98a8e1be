//! Reservations: book tokens now, use them when they arrive.
//!
//! A GCRA TAT is a queue position. Reserving `cost` tokens moves it exactly as a spend would,
//! with one CAS, even when the tokens only arrive in the future; the reservation says when. So
//! each reserver gets its own slot in arrival order: waiters wake one at a time, spaced by the
//! emission interval, with no retry loop and no thundering herd.

use crate::clock::Clock;
use crate::engine::bucket_ref::{BucketRef, LiveQuota, TatStore};
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
/// Dropping a reservation keeps the booking (the caller is assumed to go ahead at `ready_at`);
/// [`Reservation::cancel`] gives the tokens back and [`Reservation::settle`] corrects the cost.
/// Forgetting a reservation therefore never admits more than the limit. A reservation that does
/// not wait (`max_wait` zero) is a check that can be taken back: `reserve_n(cost,
/// Duration::ZERO)`, then `cancel()` if the request is not carried out after all.
///
/// A give-back never returns more than the booking still holds: its tokens that the bucket
/// has already refilled (those due before now) do not come back, and neither does anything
/// after the bucket's quota changed (a limiter's) or the key's bucket was removed (a keyed
/// limiter's) since the booking. Cancelling uses the quota the tokens were booked under.
///
/// A reservation borrows its limiter. To settle it where the borrow cannot go (reserve in a
/// handler, settle in `tokio::spawn` once the real cost is known), [`detach`](Self::detach) it
/// into a [`Ticket`] and [`attach`](Limiter::attach) that to the limiter there.
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
pub struct Reservation<'a, C: Clock + ?Sized> {
    store: &'a dyn TatStore,
    clock: &'a C,
    /// The quota the booked bucket follows (a keyed limiter's default), if it does.
    follows: Option<&'a dyn LiveQuota>,
    ticket: Ticket,
    allowed: Allowed,
}

/// A [`Reservation`] detached from the limiter it was booked on: `Copy`, `'static` and
/// `Send`, to keep where a borrow cannot go (a request's extensions, another task). It does
/// nothing by itself; [`Limiter::attach`] and
/// [`KeyedLimiter::attach`](crate::KeyedLimiter::attach) give the reservation back, on that
/// limiter only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    /// The limiter it was booked on (its store's [`TatStore::origin`]).
    pub(crate) origin: u64,
    /// The bucket's id in its store (a keyed limiter's fingerprint).
    pub(crate) id: u64,
    pub(crate) quota: Quota,
    pub(crate) start_empty: bool,
    /// Whether the booking follows the limiter's default quota (a key's handle without a
    /// quota of its own): a settle above its cost is then charged under the default as it is.
    pub(crate) follows_default: bool,
    pub(crate) cost: u32,
    pub(crate) ready_at: Nanos,
    pub(crate) receipt: Receipt,
}

impl<C: Clock + ?Sized> core::fmt::Debug for Reservation<'_, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Reservation")
            .field("cost", &self.ticket.cost)
            .field("ready_at", &self.ticket.ready_at)
            .field("allowed", &self.allowed)
            .finish_non_exhaustive()
    }
}

impl<'a, C: Clock + ?Sized> Reservation<'a, C> {
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
        let (receipt, booking) = bucket.book(cost, now.as_u64(), max_wait_ns)?;
        let ticket = Ticket {
            origin: bucket.store.origin(),
            id: bucket.id,
            quota: bucket.quota,
            start_empty: bucket.start_empty,
            follows_default: bucket.follows.is_some(),
            cost,
            ready_at: Nanos::new(booking.ready_at),
            receipt,
        };
        Ok(Reservation {
            store: bucket.store,
            clock: bucket.clock,
            follows: bucket.follows,
            ticket,
            allowed: booking.allowed,
        })
    }

    /// The reservation of `ticket` on the limiter whose store and clock these are, and whose
    /// default quota is `default` (a keyed limiter's); `None` if the ticket is another
    /// limiter's.
    pub(crate) fn attach(
        ticket: Ticket,
        store: &'a dyn TatStore,
        clock: &'a C,
        default: Option<&'a dyn LiveQuota>,
    ) -> Option<Self> {
        (ticket.origin == store.origin()).then(|| {
            let follows = default.filter(|_| ticket.follows_default);
            let bucket = BucketRef {
                store,
                id: ticket.id,
                quota: ticket.quota,
                clock,
                start_empty: ticket.start_empty,
                follows,
            };
            let level = crate::engine::gcra::level(
                ticket.receipt.after.saturating_sub(bucket.now().as_u64()),
                &ticket.quota,
            );
            Reservation {
                store,
                clock,
                follows,
                ticket,
                allowed: Allowed::new(level),
            }
        })
    }

    /// The reserved bucket, as booked.
    pub(crate) fn bucket(&self) -> BucketRef<'a, C> {
        BucketRef {
            store: self.store,
            id: self.ticket.id,
            quota: self.ticket.quota,
            clock: self.clock,
            start_empty: self.ticket.start_empty,
            follows: self.follows,
        }
    }

    /// The same booking, detached from the limiter (see [`Ticket`]): the tokens stay booked.
    pub fn detach(self) -> Ticket {
        self.ticket
    }

    /// The instant the booked tokens are there (on the limiter's clock).
    pub fn ready_at(&self) -> Nanos {
        self.ticket.ready_at
    }

    /// How long to wait from `now` until [`Reservation::ready_at`] (zero if already there).
    pub fn ready_in_at(&self, now: Nanos) -> Duration {
        self.ticket.ready_at.saturating_duration_since(now)
    }

    /// How long to wait from the bucket's time now until [`Reservation::ready_at`] (zero if
    /// already there).
    pub fn ready_in(&self) -> Duration {
        self.ready_in_at(self.bucket().now())
    }

    /// The tokens this reservation booked.
    pub fn cost(&self) -> u32 {
        self.ticket.cost
    }

    /// The bucket just after the booking (or, for a reservation [attached](Limiter::attach)
    /// again, the booking's figures now): `remaining` (0 while in debt) and `reset_after`.
    pub fn allowed(&self) -> Allowed {
        self.allowed
    }

    /// Keeps the booking; the same as dropping the reservation, but says so.
    pub fn commit(self) -> Allowed {
        self.allowed
    }

    /// Gives the tokens back now, as far as the booking still holds them: see
    /// [`Reservation::cancel_at`].
    pub fn cancel(self) {
        self.bucket()
            .give_back(&self.ticket.receipt, self.ticket.cost, None);
    }

    /// Gives the tokens back at `now`. What comes back, exactly (docs/design.md, section 5):
    /// - if nothing was booked, spent or given back on the bucket since, it returns to the
    ///   state it had before the booking, as if the booking had never been made;
    /// - otherwise at most the tokens the booking still holds: `cost` tokens, less those
    ///   the bucket has refilled since (the part of the booking due before `now`), less how far
    ///   give-backs of earlier bookings can have moved this one down. A give-back can leave
    ///   the limit under-used, never exceeded;
    /// - nothing while a later booking may still be waiting above it (the bucket holds more
    ///   than its depth): that booking keeps the time it was given, and tokens returned beneath
    ///   it would let a new booking overlap it;
    /// - nothing after a quota change of the limiter, or once the key's bucket was removed.
    ///
    /// `now` must be no earlier than a time any other operation on the bucket has used (the
    /// forms without `_at` read the clock so): a give-back at an earlier time would hand back
    /// tokens that a later spend found refilled.
    pub fn cancel_at(self, now: Nanos) {
        self.bucket()
            .give_back(&self.ticket.receipt, self.ticket.cost, Some(now));
    }

    /// Deliberately broken [`cancel_at`](Self::cancel_at) (at the bucket's time without
    /// `at`): the give-back with the step `fault` broken. Only for the loom models.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn cancel_faulty(self, at: Option<Nanos>, fault: crate::engine::give_back::GiveBackFault) {
        let receipt = &self.ticket.receipt;
        self.bucket()
            .give_back_faulty(receipt, self.ticket.cost, at, fault);
    }

    /// Settles the reservation at its actual cost (two-phase use: reserve an estimate, settle
    /// the real figure, e.g. the tokens of an LLM reply). See [`Reservation::settle_at`].
    pub fn settle(self, actual: u32) {
        self.settle_as(actual, None)
    }

    /// Settles at `now`, once the work the tokens were booked for is done: a lower actual cost
    /// gives the difference back by the rule of [`Reservation::cancel_at`] (the tokens booked
    /// last come back first); a higher one spends the difference unconditionally, since the
    /// work is already done, so the bucket may go into debt that later requests wait out. The
    /// extra tokens are charged to the bucket as it is now: under a limiter's live quota, under
    /// a keyed limiter's default as it is now for a key booked without a quota of its own, to
    /// a key's bucket even if it was removed and made again. `now` as for
    /// [`cancel_at`](Self::cancel_at).
    ///
    /// A settle before [`ready_at`](Self::ready_at) gives nothing back: the tokens are not there
    /// yet, so the work cannot have used them, and they may still be used at `ready_at`, which
    /// later bookings were timed around. [`cancel`](Self::cancel) a booking that will not be
    /// used.
    pub fn settle_at(self, actual: u32, now: Nanos) {
        self.settle_as(actual, Some(now))
    }

    fn settle_as(self, actual: u32, at: Option<Nanos>) {
        let (bucket, cost) = (self.bucket(), self.ticket.cost);
        if actual < cost {
            // Before `ready_at` the tokens are not there to have been used: a settle then gives
            // nothing back (see `settle_at`).
            let ready = at.unwrap_or_else(|| bucket.now()) >= self.ticket.ready_at;
            if ready {
                bucket.give_back(&self.ticket.receipt, cost - actual, at);
            }
        } else if actual > cost {
            let now = at.unwrap_or_else(|| bucket.now());
            bucket.force(actual - cost, now.as_u64());
        }
    }
}

impl<C: Clock> Limiter<C> {
    /// Books `cost` tokens now, even if they only arrive later, provided the wait is at most
    /// `max_wait`. A longer wait is refused and books nothing; so is `cost > burst` (with
    /// [`Denied::retry_after`] `None`), which could never be served.
    pub fn reserve_n(&self, cost: u32, max_wait: Duration) -> Result<Reservation<'_, C>, Denied> {
        let bucket = self.bucket_ref();
        Reservation::book(bucket.clone(), cost, max_wait, bucket.now())
            .map_err(|denied| bucket.lagged(denied))
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

    /// The reservation of a [`Ticket`] this limiter issued ([`Reservation::detach`]), to
    /// cancel or settle it; `None` for another limiter's ticket.
    ///
    /// ```
    /// use cellrate::{Limiter, ManualClock, Quota};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let limiter = Arc::new(Limiter::with_clock(Quota::per_second(100), ManualClock::new()));
    /// let ticket = limiter.reserve_n(10, Duration::ZERO).unwrap().detach();
    /// let shared = Arc::clone(&limiter);
    /// std::thread::spawn(move || shared.attach(ticket).unwrap().settle(4)) // the real cost
    ///     .join()
    ///     .unwrap();
    /// assert_eq!(limiter.available(), 96);
    /// ```
    pub fn attach(&self, ticket: Ticket) -> Option<Reservation<'_, C>> {
        Reservation::attach(ticket, self.cells(), self.clock(), None)
    }
}
