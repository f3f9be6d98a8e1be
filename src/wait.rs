//! Waiting for tokens instead of being refused: shaping, on top of reservations.
//!
//! Every form books a [`Reservation`] first (one CAS, a place in line) and then sleeps until it
//! is ready, so waiters wake in booking order, one emission interval apart, and never poll the
//! limiter. A cost above the burst, or a wait beyond `max_wait`, is refused at once, never a
//! hang.
//!
//! # Jitter
//! Waiters of one limiter wake one emission interval apart, in booking order. When many
//! processes share a limit (through Redis, say) or a wake-up sets off a burst of work
//! downstream, a random extra delay spreads them: the `_with_jitter` forms sleep a uniformly
//! random extra time in `[0, max_jitter]` after the tokens are there. Jitter only ever delays:
//! the tokens were booked at their place in line, so using them later can never admit more than
//! the limit.

use crate::clock::Clock;
use crate::limiter::Limiter;
use crate::named::count_wait;
use crate::outcome::{Allowed, Denied};
use crate::reservation::Reservation;
use core::time::Duration;

impl<C: Clock> Reservation<'_, C> {
    /// Blocks the thread until the booked tokens are there, then keeps the booking.
    ///
    /// The sleep is `std::thread::sleep` for the wait computed now, so it assumes a clock that
    /// runs at real speed (it never waits on a [`ManualClock`](crate::ManualClock) to be
    /// advanced).
    pub fn wait_blocking(self) -> Allowed {
        self.wait_blocking_with_jitter(Duration::ZERO)
    }

    /// [`wait_blocking`](Self::wait_blocking), then a random extra delay of at most
    /// `max_jitter` (see the module's *Jitter*).
    pub fn wait_blocking_with_jitter(self, max_jitter: Duration) -> Allowed {
        let wait = self.ready_in().saturating_add(jitter(max_jitter));
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
        self.commit()
    }

    /// Waits asynchronously until the booked tokens are there, then keeps the booking. Works on
    /// any executor: the timer is `futures_timer::Delay` (feature `async`). Dropping the future
    /// before it resolves cancels the reservation, giving its tokens back as
    /// [`Reservation::cancel`] describes.
    #[cfg(feature = "async")]
    pub async fn ready(self) -> Allowed {
        self.ready_with_jitter(Duration::ZERO).await
    }

    /// [`ready`](Self::ready), then a random extra delay of at most `max_jitter` (see the
    /// module's *Jitter*). Dropping the future before it resolves cancels the reservation.
    #[cfg(feature = "async")]
    pub async fn ready_with_jitter(self, max_jitter: Duration) -> Allowed {
        let pending = CancelOnDrop(Some(self));
        let wait = pending.0.as_ref().map_or(Duration::ZERO, |r| r.ready_in());
        let wait = wait.saturating_add(jitter(max_jitter));
        if !wait.is_zero() {
            futures_timer::Delay::new(wait).await;
        }
        pending.keep()
    }
}

/// A uniformly random delay in `[0, max]`, to the nanosecond.
fn jitter(max: Duration) -> Duration {
    if max.is_zero() {
        return Duration::ZERO;
    }
    let max_ns = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(fastrand::u64(0..=max_ns))
}

impl<C: Clock> Limiter<C> {
    /// Blocks the thread until one token is there, however long that takes (one emission
    /// interval at most, unless reservations or debt are queued ahead).
    pub fn wait(&self) -> Result<Allowed, Denied> {
        self.wait_n(1, Duration::MAX)
    }

    /// Blocks the thread until `cost` tokens are there, if that takes at most `max_wait`;
    /// otherwise returns the refusal at once, having booked nothing. See
    /// [`Reservation::wait_blocking`].
    pub fn wait_n(&self, cost: u32, max_wait: Duration) -> Result<Allowed, Denied> {
        let booking = self.reserve_n(cost, max_wait);
        count_wait(self.named.as_deref(), cost, &booking);
        Ok(booking?.wait_blocking())
    }

    /// Waits asynchronously until `cost` tokens are there, if that takes at most `max_wait`;
    /// otherwise resolves to the refusal at once, having booked nothing. Dropping the future
    /// cancels the reservation. See [`Reservation::ready`].
    #[cfg(feature = "async")]
    pub async fn until_ready_n(&self, cost: u32, max_wait: Duration) -> Result<Allowed, Denied> {
        let booking = self.reserve_n(cost, max_wait);
        count_wait(self.named.as_deref(), cost, &booking);
        Ok(booking?.ready().await)
    }

    /// Waits asynchronously until one token is there, however long that takes; dropping the
    /// future cancels. See [`Limiter::wait`].
    #[cfg(feature = "async")]
    pub async fn until_ready(&self) -> Result<Allowed, Denied> {
        self.until_ready_n(1, Duration::MAX).await
    }
}

/// A reservation that is cancelled if dropped before [`CancelOnDrop::keep`]: what makes a
/// dropped `ready` future give its tokens back.
#[cfg(feature = "async")]
struct CancelOnDrop<'a, C: Clock>(Option<Reservation<'a, C>>);

#[cfg(feature = "async")]
impl<C: Clock> CancelOnDrop<'_, C> {
    fn keep(mut self) -> Allowed {
        let reservation = self.0.take().expect("kept once");
        reservation.commit()
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
