//! Models of one bucket: concurrent spends, and spends racing give-backs.
//!
//! Every model drives the `_at(now)` forms (loom cannot model time) and has a twin on a
//! deliberately broken step (load + store instead of compare-and-swap) that must fail.
#![cfg(loom)]

use cellrate::{GiveBackFault, Limiter, ManualClock, Nanos, Quota};
use cellrate_loom_tests::{bounded, spawn};
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

const T: u64 = 10; // emission interval of every model, in ns

fn limiter(burst: u32) -> Arc<Limiter<ManualClock>> {
    let quota = Quota::try_new(Duration::from_nanos(T), burst).unwrap();
    Arc::new(Limiter::with_clock(quota, ManualClock::new()))
}

/// `threads` threads each spend one token at `now = 0` from a bucket of `burst < threads`.
/// Admitted must be at most the burst, and the TAT must be exactly `admitted * T`: every
/// admission is recorded (no lost update) and no denial wrote anything. Two threads run
/// exhaustively; three with a preemption bound of 3 (exhaustive search of three takes long).
fn spend_model(threads: usize, burst: u32, racy: bool) {
    let limiter = limiter(burst);
    let admitted = Arc::new(AtomicU32::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (limiter, admitted) = (limiter.clone(), admitted.clone());
            thread::spawn(move || {
                let outcome = if racy {
                    limiter.check_n_at_racy(1, Nanos::ZERO)
                } else {
                    limiter.check_n_at(1, Nanos::ZERO)
                };
                if outcome.is_ok() {
                    // Relaxed: a counter read after join, which orders it.
                    admitted.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let admitted = admitted.load(Ordering::Relaxed);
    assert!(admitted <= burst, "admitted {admitted} > burst {burst}");
    assert_eq!(
        admitted, burst,
        "a token was left unspent by {threads} spenders"
    );
    assert_eq!(
        limiter.theoretical_arrival(),
        Nanos::new(u64::from(admitted) * T),
        "lost update"
    );
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
/// (`reserve_n_at(1, ZERO)`). One thread spends a token while another cancels `X`. Whatever the
/// order, the result is one token spent net: TAT = T (cancelled first, `X` is undone exactly
/// and the spend takes its place; spent first, the cancel gives back `X`'s token from
/// beneath the spend), and the level never rises above the capacity (TAT never below `now`).
fn spend_give_back_model(racy_spend: bool, racy_give_back: bool) {
    let limiter = limiter(2);
    let x = limiter
        .reserve_n_at(1, Duration::ZERO, Nanos::ZERO)
        .unwrap();
    let spender = {
        let limiter = limiter.clone();
        spawn(move || {
            let outcome = if racy_spend {
                limiter.check_n_at_racy(1, Nanos::ZERO)
            } else {
                limiter.check_n_at(1, Nanos::ZERO)
            };
            assert!(outcome.is_ok(), "one token was there for the spender");
        })
    };
    if racy_give_back {
        x.cancel_faulty(Some(Nanos::ZERO), GiveBackFault::LoadStore);
    } else {
        x.cancel_at(Nanos::ZERO);
    }
    spender.join().unwrap();
    assert_eq!(
        limiter.theoretical_arrival(),
        Nanos::new(T),
        "lost spend or give-back"
    );
    assert_eq!(limiter.available_at(Nanos::ZERO), 1);
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
