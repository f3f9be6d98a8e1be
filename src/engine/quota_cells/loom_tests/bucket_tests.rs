//! Models of one bucket: concurrent spends, and spends racing give-backs.
//!
//! Each has a twin whose spend or give-back writes the TAT by a load and a store instead of a
//! compare-and-swap, which must fail.

use super::{quota_of, tat, T};
use crate::loom_tests::{admitted_on_threads, bounded, spawn};
use crate::sync::test_faults::racy;
use crate::{Limiter, ManualClock, Nanos};
use core::time::Duration;
use loom::sync::Arc;

fn limiter(burst: u32) -> Arc<Limiter<ManualClock>> {
    Arc::new(Limiter::with_clock(quota_of(T, burst), ManualClock::new()))
}

/// Spends one token at 0, by a load and a store if `racy_spend`.
fn spend(limiter: &Limiter<ManualClock>, racy_spend: bool) -> bool {
    let check = || limiter.at(Nanos::ZERO).check_n(1).is_ok();
    if racy_spend {
        racy(check)
    } else {
        check()
    }
}

/// `threads` threads each spend one token at `now = 0` from a bucket of `burst < threads`.
/// Admitted must be at most the burst, and the TAT must be exactly `admitted * T`: every
/// admission is recorded (no lost update) and no denial wrote anything. Two threads run
/// exhaustively; three with a preemption bound of 3 (exhaustive search of three takes long).
fn spend_model(threads: usize, burst: u32, racy_spend: bool) {
    let limiter = limiter(burst);
    let admitted = admitted_on_threads((0..threads).map(|_| {
        let limiter = limiter.clone();
        move || spend(&limiter, racy_spend)
    }));
    assert!(admitted <= burst, "admitted {admitted} > burst {burst}");
    assert_eq!(
        admitted, burst,
        "a token was left unspent by {threads} spenders"
    );
    assert_eq!(tat(&limiter), u64::from(admitted) * T, "lost update");
}

#[test]
fn two_spenders_share_one_token() {
    loom::model(|| spend_model(2, 1, false));
}

#[test]
#[should_panic(expected = "admitted 2 > burst 1")]
fn two_spenders_with_load_store_over_admit() {
    loom::model(|| spend_model(2, 1, true));
}

#[test]
fn three_spenders_share_two_tokens() {
    bounded(3).check(|| spend_model(3, 2, false));
}

#[test]
#[should_panic(expected = "> burst 2")]
fn three_spenders_with_load_store_over_admit() {
    bounded(3).check(|| spend_model(3, 2, true));
}

/// The bucket (burst 2) holds one token and a booking `X` of the other, made to be taken back
/// (`reserve(1, ZERO)` at 0). One thread spends a token while another cancels `X`. Whatever
/// the order, the result is one token spent net: TAT = T (cancelled first, `X` is undone
/// exactly and the spend takes its place; spent first, the cancel gives back `X`'s token from
/// beneath the spend), and the level never rises above the capacity (TAT never below `now`).
fn spend_give_back_model(racy_spend: bool, racy_give_back: bool) {
    let limiter = limiter(2);
    let x = limiter.at(Nanos::ZERO).reserve(1, Duration::ZERO).unwrap();
    let spender = {
        let limiter = limiter.clone();
        spawn(move || assert!(spend(&limiter, racy_spend), "one token was there"))
    };
    if racy_give_back {
        racy(|| x.cancel_at(Nanos::ZERO));
    } else {
        x.cancel_at(Nanos::ZERO);
    }
    spender.join().unwrap();
    assert_eq!(tat(&limiter), T, "lost spend or give-back");
    assert_eq!(limiter.at(Nanos::ZERO).available(), 1);
}

#[test]
fn spend_racing_give_back_loses_nothing() {
    loom::model(|| spend_give_back_model(false, false));
}

#[test]
#[should_panic(expected = "lost spend or give-back")]
fn spend_racing_load_store_give_back_loses_the_spend() {
    loom::model(|| spend_give_back_model(false, true));
}

#[test]
#[should_panic(expected = "lost spend or give-back")]
fn load_store_spend_racing_give_back_loses_the_give_back() {
    loom::model(|| spend_give_back_model(true, false));
}
