//! Waiting for tokens instead of being refused: shaping, on top of reservations.
//!
//! Both forms book a [`Reservation`](crate::Reservation) first (one CAS, a place in line) and
//! then sleep until it is ready, so waiters wake in booking order, one emission interval apart,
//! and never poll the limiter. A cost above the burst, or a wait beyond `max_wait`, is refused
//! at once, never a hang.

use crate::clock::Clock;
use crate::limiter::Limiter;
use crate::outcome::{Allowed, Denied};
use core::time::Duration;

impl<C: Clock> Limiter<C> {
    /// Blocks the thread until `cost` tokens are there, if that takes at most `max_wait`;
    /// otherwise returns the refusal at once, having booked nothing.
    ///
    /// The sleep is `std::thread::sleep` for the wait computed at booking time, so it assumes a
    /// clock that runs at real speed (it never waits on a [`ManualClock`](crate::ManualClock)
    /// to be advanced).
    pub fn wait_n(&self, cost: u32, max_wait: Duration) -> Result<Allowed, Denied> {
        let reservation = self.reserve_n(cost, max_wait)?;
        let wait = reservation.wait();
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
        Ok(reservation.commit())
    }

    /// Waits asynchronously until `cost` tokens are there, if that takes at most `max_wait`;
    /// otherwise resolves to the refusal at once, having booked nothing.
    ///
    /// Works on any executor: the timer is `futures_timer::Delay` (feature `async`). Dropping
    /// the future before it resolves cancels the reservation, giving its tokens back as
    /// [`Reservation::cancel`](crate::Reservation::cancel) describes.
    #[cfg(feature = "async")]
    pub async fn until_ready_n(&self, cost: u32, max_wait: Duration) -> Result<Allowed, Denied> {
        let pending = CancelOnDrop(Some(self.reserve_n(cost, max_wait)?));
        let wait = pending.0.as_ref().map_or(Duration::ZERO, |r| r.wait());
        if !wait.is_zero() {
            futures_timer::Delay::new(wait).await;
        }
        Ok(pending.keep())
    }
}

/// A reservation that is cancelled if dropped before [`CancelOnDrop::keep`]: what makes a
/// dropped `until_ready_n` future give its tokens back.
#[cfg(feature = "async")]
struct CancelOnDrop<'a, C: Clock>(Option<crate::Reservation<'a, C>>);

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
