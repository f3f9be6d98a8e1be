//! Models of reservations: a cancellation racing another booking.
//!
//! One thread books a token and cancels it; another books one and keeps it. Whatever the
//! order, the bucket ends exactly at the end of the kept booking's slot (`ready_at + T` with
//! burst 1): a cancel before the other booking is undone exactly, and a cancel under it gives
//! nothing back, so no new booking can overlap the kept one. The twin whose cancel restores
//! the old TAT blindly (no CAS) must fail.
#![cfg(loom)]

use cellrate::{Limiter, ManualClock, Nanos, Quota};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

const T: u64 = 10;

fn model(racy_cancel: bool) {
    let quota = Quota::try_new(Duration::from_nanos(T), 1).unwrap();
    let limiter = Arc::new(Limiter::with_clock(quota, ManualClock::new()));
    let wait = Duration::from_nanos(10 * T);
    let keeper = {
        let limiter = limiter.clone();
        thread::spawn(move || {
            let booked = limiter.reserve_n_at(1, wait, Nanos::ZERO).unwrap();
            booked.ready_at()
        })
    };
    let cancelled = limiter.reserve_n_at(1, wait, Nanos::ZERO).unwrap();
    if racy_cancel {
        cancelled.cancel_racy();
    } else {
        cancelled.cancel_at(Nanos::ZERO);
    }
    let kept_ready_at = keeper.join().unwrap();
    assert_eq!(
        limiter.theoretical_arrival(),
        Nanos::new(kept_ready_at.as_u64() + T),
        "the kept booking was lost or the cancelled one kept"
    );
}

#[test]
fn cancel_racing_a_booking_keeps_exactly_the_booking() {
    loom::model(|| model(false));
}

#[test]
#[should_panic(expected = "the kept booking was lost")]
fn blind_cancel_racing_a_booking_loses_it() {
    loom::model(|| model(true));
}
