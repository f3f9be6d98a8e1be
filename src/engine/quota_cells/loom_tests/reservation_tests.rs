//! Models of reservations: a cancellation racing another booking, and a cancel that a
//! give-back and a spend came between.

use super::{cancel_broken, quota_of, tat, BrokenGiveBack, T};
use crate::loom_tests::spawn;
use crate::sync::test_faults::racy;
use crate::{Limiter, ManualClock, Nanos};
use core::time::Duration;
use loom::sync::Arc;
use loom::thread;

/// One thread books a token and cancels it; another books one and keeps it. Whatever the
/// order, the bucket ends exactly at the end of the kept booking's slot (`ready_at + T` with
/// burst 1): a cancel before the other booking is undone exactly, and a cancel under it gives
/// nothing back while the other may still be waiting, so no new booking can overlap the kept
/// one. The twin, whose cancel writes by a load and a store (no compare-and-swap), must fail.
fn model(racy_cancel: bool) {
    let limiter = Arc::new(Limiter::with_clock(quota_of(T, 1), ManualClock::new()));
    let wait = Duration::from_nanos(10 * T);
    let keeper = {
        let limiter = limiter.clone();
        spawn(move || {
            let booked = limiter.at(Nanos::ZERO).reserve(1, wait).unwrap();
            booked.ready_at()
        })
    };
    let cancelled = limiter.at(Nanos::ZERO).reserve(1, wait).unwrap();
    if racy_cancel {
        racy(|| cancelled.cancel_at(Nanos::ZERO));
    } else {
        cancelled.cancel_at(Nanos::ZERO);
    }
    let kept_ready_at = keeper.join().unwrap();
    assert_eq!(
        tat(&limiter),
        kept_ready_at.as_u64() + T,
        "the kept booking was lost or the cancelled one kept"
    );
}

#[test]
fn cancel_racing_a_booking_keeps_exactly_the_booking() {
    loom::model(|| model(false));
}

#[test]
#[should_panic(expected = "the kept booking was lost")]
fn load_store_cancel_racing_a_booking_loses_it() {
    loom::model(|| model(true));
}

/// A give-back that a give-back and a spend came between (ABA on the TAT). Quota T = 3 ns,
/// burst 2, one `ManualClock` at 0 for every operation. `X` and then `R` book a token each,
/// to be taken back (`reserve(1, ZERO)`). One thread cancels `X`, sets the clock to 3 and
/// books `Y`, which it keeps; another cancels `R`. Neither `X` nor `R` is carried out, so at
/// 3, with `Y` holding one token of the burst, the limiter may admit at most one more.
///
/// With the first thread entirely before the second, `X`'s cancel gives 3 ns from beneath
/// `R` (entered in the ledger) and `Y` brings the TAT back to `R`'s end, 6: by the rule `R`
/// then gives nothing at 3 (it has moved down to end at 3, all refilled). The twin cancels `R`
/// by value (the TAT is the one `R` left, so it restores the TAT from before `R`, 3) and
/// admits two more.
fn aba_model(by_value: bool) {
    let clock = ManualClock::new();
    let limiter = Arc::new(Limiter::with_clock(quota_of(3, 2), clock.clone()));
    let x = limiter.reserve(1, Duration::ZERO).unwrap().detach();
    let r = limiter.reserve(1, Duration::ZERO).unwrap().detach();
    let b = {
        let limiter = limiter.clone();
        thread::spawn(move || {
            limiter.attach(x).unwrap().cancel();
            clock.set(Nanos::new(3));
            let y = limiter.reserve(1, Duration::ZERO);
            assert!(y.is_ok(), "a token was there for Y");
        })
    };
    let a = {
        let limiter = limiter.clone();
        thread::spawn(move || {
            let r = limiter.attach(r).unwrap();
            if by_value {
                cancel_broken(&limiter, r, BrokenGiveBack::ByValue, None);
            } else {
                r.cancel();
            }
        })
    };
    a.join().unwrap();
    b.join().unwrap();
    let more = admitted_at(&limiter, 3);
    assert!(more <= 1, "admitted {more} more beside Y at 3, burst 2");
}

/// How many single tokens `limiter` admits at `now`, one check after another.
pub(super) fn admitted_at(limiter: &Limiter<ManualClock>, now: u64) -> usize {
    (0..)
        .take_while(|_| limiter.at(Nanos::new(now)).check_n(1).is_ok())
        .count()
}

#[test]
fn a_give_back_that_a_give_back_and_a_spend_came_between_returns_no_more_than_it_holds() {
    loom::model(|| aba_model(false));
}

#[test]
#[should_panic(expected = "more beside Y at 3, burst 2")]
fn a_give_back_by_value_that_a_give_back_and_a_spend_came_between_over_admits() {
    loom::model(|| aba_model(true));
}
