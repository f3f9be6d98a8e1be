//! A model of the ledger of give-backs (`give_back.rs`): bookings and give-backs of one bucket
//! racing each other, checked by the safety property of every give-back. Replaying only the
//! requests actually carried out, at the times they used, through an exact token bucket,
//! every one of them passes, and so do the checks that drain the bucket at the end.
//!
//! The twin enters a give-back's credit in the ledger as completed before its compare-and-swap
//! instead of after it: a booking that reads the ledger in between counts a credit that only
//! lands after its spend, and a later give-back of it then takes it for higher in the bucket
//! than it is.

use super::{cancel_broken, quota_of, BrokenGiveBack};
use crate::{Limiter, ManualClock, Nanos, Reservation};
use core::time::Duration;
use loom::sync::Arc;
use loom::thread;

/// The emission interval and the burst of the model's quota.
const T: u64 = 3;
const BURST: u32 = 3;

/// Quota T = 3 ns, burst 3, one `ManualClock` at 0 for every operation. `X` then `Y` book a
/// token each, to be taken back (`reserve(1, ZERO)`); `Y` is kept. One thread cancels `X`.
/// Another books `R` (to be taken back), sets the clock to 6, books `Z` (kept) and cancels `R`.
/// Carried out: `Y` at 0 and `Z` at 6; then checks at 6 take what is left, and the whole must
/// pass through an exact token bucket.
///
/// The schedule that the twin fails on: `X`'s cancel finds `R`'s spend between its load and
/// its compare-and-swap and tries again, moving `R` down by a token; `R` read the ledger
/// while the twin's first try had entered its credit as completed, so `R`'s cancel at 6 finds
/// no shift, takes itself for the top of the bucket (where `Z` is) and restores the TAT from
/// before it, handing out `Z`'s token.
fn ledger_model(completed_first: bool) {
    let clock = ManualClock::new();
    let limiter = Arc::new(Limiter::with_clock(quota_of(T, BURST), clock.clone()));
    let x = limiter.reserve(1, Duration::ZERO).unwrap().detach();
    limiter.reserve(1, Duration::ZERO).unwrap().allowed(); // Y
    let cancel = move |limiter: &Limiter<ManualClock>, booked: Reservation<'_, ManualClock>| {
        if completed_first {
            cancel_broken(limiter, booked, BrokenGiveBack::CompletedFirst, None);
        } else {
            booked.cancel();
        }
    };
    let a = {
        let limiter = limiter.clone();
        thread::spawn(move || cancel(&limiter, limiter.attach(x).unwrap()))
    };
    let b = {
        let limiter = limiter.clone();
        thread::spawn(move || {
            let r = limiter.reserve(1, Duration::ZERO).unwrap().detach();
            clock.set(Nanos::new(6));
            let z = limiter.reserve(1, Duration::ZERO);
            assert!(z.is_ok(), "a token was there for Z");
            cancel(&limiter, limiter.attach(r).unwrap());
        })
    };
    a.join().unwrap();
    b.join().unwrap();
    let mut carried = vec![0, 6]; // Y, Z
    while limiter.at(Nanos::new(6)).check_n(1).is_ok() {
        carried.push(6);
    }
    replay_exactly(&carried);
}

/// Replays one-token requests at `times` (in order) through an exact token bucket of the
/// model's quota, full at 0, and panics at the first one it refuses.
fn replay_exactly(times: &[u64]) {
    let depth = T * u64::from(BURST);
    let (mut level, mut last) = (depth, 0);
    for (i, &t) in times.iter().enumerate() {
        level = (level + (t - last)).min(depth);
        last = t;
        assert!(
            level >= T,
            "the exact bucket refuses request {i} at {t} of {times:?}"
        );
        level -= T;
    }
}

#[test]
fn give_backs_racing_bookings_never_admit_beyond_the_exact_bucket() {
    loom::model(|| ledger_model(false));
}

#[test]
#[should_panic(expected = "the exact bucket refuses")]
fn credit_entered_as_completed_before_its_compare_and_swap_over_admits() {
    loom::model(|| ledger_model(true));
}
