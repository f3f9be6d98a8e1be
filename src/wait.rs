//! Waiting for tokens instead of being refused: a [`Reservation`] booked, then slept on
//! (docs/design.md §4, with when a wait ends).

use crate::clock::Clock;
use crate::engine::bucket_ref::BucketRef;
use crate::engine::counting::{count_wait, Named};
use crate::limiter::Limiter;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::reservation::Reservation;
use core::time::Duration;

/// How many times a wait sleeps again when the bucket's time has not reached `ready_at` after
/// the first sleep (a refresher of a cached clock that runs late): a bound, so that a clock
/// that does not move by itself (a [`ManualClock`](crate::ManualClock)) cannot hang a wait.
pub(crate) const MORE_SLEEPS: u32 = 8;

/// What is left to sleep before a booking ready at `ready_at` on `bucket` may be used: nothing
/// once the bucket's own time has reached `ready_at`; the first sleep (`first`) runs to the
/// exact time `ready_at + (exact - bucket time) + lag` ([`Clock::lag_within`]), later ones to
/// the bucket's `ready_at`, at least a millisecond each.
pub(crate) fn still_to_sleep<C: Clock + ?Sized>(
    bucket: &BucketRef<'_, C>,
    ready_at: Nanos,
    first: bool,
) -> Duration {
    let bucket_now = bucket.now();
    let short = ready_at.saturating_duration_since(bucket_now);
    if short.is_zero() {
        return short;
    }
    if first {
        let exact = bucket.clock.now();
        let behind = exact.saturating_duration_since(bucket_now);
        let lag = bucket.reading.lag(bucket.clock);
        return short
            .saturating_add(behind)
            .saturating_add(Duration::from_nanos(lag.as_u64()));
    }
    short.max(Duration::from_millis(1))
}

impl<'a, C: Clock> Reservation<'a, C> {
    /// Blocks the thread until the booked tokens are there, then keeps the booking. The sleep
    /// is `std::thread::sleep`: on a [`ManualClock`](crate::ManualClock) it sleeps for the
    /// wait computed from its time and returns, whether or not the clock was advanced.
    pub fn wait(self) -> Allowed {
        let ready_at = self.ready_at();
        for round in 0..=MORE_SLEEPS {
            let wait = still_to_sleep(self.bucket(), ready_at, round == 0);
            if wait.is_zero() {
                break;
            }
            std::thread::sleep(wait);
        }
        self.allowed()
    }

    /// Waits asynchronously until the booked tokens are there, then keeps the booking. Works on
    /// any executor (the timer is `futures_timer::Delay`). Dropping the future before it
    /// resolves, polled or not, cancels the reservation ([`Reservation::cancel`]).
    #[cfg(feature = "async")]
    pub fn until_ready(self) -> impl core::future::Future<Output = Allowed> + 'a {
        // Made before the future is first polled, so that dropping it unpolled cancels too.
        let pending = CancelOnDrop(Some(self));
        async move {
            if let Some(reservation) = &pending.0 {
                let ready_at = reservation.ready_at();
                for round in 0..=MORE_SLEEPS {
                    let wait = still_to_sleep(reservation.bucket(), ready_at, round == 0);
                    if wait.is_zero() {
                        break;
                    }
                    futures_timer::Delay::new(wait).await;
                }
            }
            pending.keep()
        }
    }
}

/// One attempt of a wait's booking: `cost` tokens of `bucket` at `now`, ready within what is
/// left of `max_wait` since `start` (the first attempt's `now`). A refusal comes with how long
/// to wait before booking again, if it was for lack of room (a keyed limiter's) and the time
/// left allows.
fn try_book<'a, C: Clock>(
    bucket: &BucketRef<'a, C>,
    cost: u32,
    max_wait: Duration,
    (start, now): (Nanos, Nanos),
) -> Result<Reservation<'a, C>, (Denied, Option<Duration>)> {
    let left = max_wait.saturating_sub(now.saturating_duration_since(start));
    Reservation::book(bucket.clone(), cost, left, now).map_err(|denied| {
        let denied = bucket.lagged(None, denied);
        // Only a refusal for lack of room says to retry within the time left: a booking that
        // has to wait that long is made, not refused.
        let again = denied.retry_after().filter(|r| *r <= left && !r.is_zero());
        (denied, again)
    })
}

/// The blocking wait of every limiter: books (again after a refusal for lack of room), sleeps,
/// counts.
pub(crate) fn wait_on<C: Clock>(
    bucket: &BucketRef<'_, C>,
    named: Option<&Named>,
    cost: u32,
    max_wait: Duration,
) -> Result<Allowed, Denied> {
    let start = bucket.now();
    let mut now = start;
    let answer = loop {
        match try_book(bucket, cost, max_wait, (start, now)) {
            Ok(booked) => break Ok(booked.wait()),
            Err((_, Some(again))) => std::thread::sleep(again),
            Err((denied, None)) => break Err(denied),
        }
        now = bucket.now();
    };
    count_wait(
        named,
        cost,
        answer.is_ok(),
        bucket.now().saturating_duration_since(start),
    );
    answer
}

/// The async wait of every limiter: books (again after a refusal for lack of room), sleeps,
/// counts; dropped, it gives the tokens back and counts nothing.
#[cfg(feature = "async")]
pub(crate) async fn until_ready_on<C: Clock>(
    bucket: &BucketRef<'_, C>,
    named: Option<&Named>,
    cost: u32,
    max_wait: Duration,
) -> Result<Allowed, Denied> {
    let start = bucket.now();
    let mut now = start;
    let answer = loop {
        match try_book(bucket, cost, max_wait, (start, now)) {
            Ok(booked) => break Ok(booked.until_ready().await),
            Err((_, Some(again))) => futures_timer::Delay::new(again).await,
            Err((denied, None)) => break Err(denied),
        }
        now = bucket.now();
    };
    count_wait(
        named,
        cost,
        answer.is_ok(),
        bucket.now().saturating_duration_since(start),
    );
    answer
}

impl<C: Clock> Limiter<C> {
    /// Blocks the thread until `cost` tokens are there, if that takes at most `max_wait`
    /// (`Duration::MAX`: however long); otherwise returns the refusal at once, having booked
    /// nothing, as for a cost above the burst. Waiters wake in booking order, one emission
    /// interval apart; where a wake-up sets off a burst downstream, sleep a random extra time
    /// after it returns (using booked tokens later never admits more than the limit).
    pub fn wait(&self, cost: u32, max_wait: Duration) -> Result<Allowed, Denied> {
        wait_on(&self.bucket_ref(), self.named.as_deref(), cost, max_wait)
    }

    /// Waits asynchronously until `cost` tokens are there, if that takes at most `max_wait`;
    /// otherwise resolves to the refusal at once, having booked nothing. Dropping the future
    /// cancels the reservation. See [`Reservation::until_ready`].
    #[cfg(feature = "async")]
    pub async fn until_ready(&self, cost: u32, max_wait: Duration) -> Result<Allowed, Denied> {
        until_ready_on(&self.bucket_ref(), self.named.as_deref(), cost, max_wait).await
    }
}

/// A reservation that is cancelled if dropped before [`CancelOnDrop::keep`]: what makes a
/// dropped `until_ready` future give its tokens back.
#[cfg(feature = "async")]
struct CancelOnDrop<'a, C: Clock>(Option<Reservation<'a, C>>);

#[cfg(feature = "async")]
impl<C: Clock> CancelOnDrop<'_, C> {
    fn keep(mut self) -> Allowed {
        let reservation = self.0.take().expect("kept once");
        reservation.allowed()
    }
}

#[cfg(feature = "async")]
impl<C: Clock> Drop for CancelOnDrop<'_, C> {
    fn drop(&mut self) {
        if let Some(reservation) = self.0.take() {
            reservation.cancel();
        }
    }
}
