//! Models of give-backs to the table: a cancel racing the eviction of its key, its eviction
//! and re-insert, or a duplicate insert of its key; an `all_of` rollback in the table, racing
//! a duplicate insert or another check.

use super::{keyed, keys_at_home_zero, spend, Keyed, T, TWO_THREADS};
use crate::keyed::table::loom_hooks::Broken;
use crate::loom_tests::{bounded, check_without_rollback, spawn};
use crate::{all_of, Limit, Limiter, ManualClock, Nanos, Quota, Ticket};
use core::time::Duration;
use loom::sync::Arc;
use loom::thread;

/// Books one token of `key` at `now` that may be taken back (`reserve(1, ZERO)`), detached
/// so that another thread can cancel it.
fn book_to_take_back(limiter: &Keyed, key: u64, now: Nanos) -> Ticket {
    let key = limiter.at(now).key(&key);
    key.reserve(1, Duration::ZERO).unwrap().detach()
}

/// One slot. Key `x` (burst 2) booked one token at 0, to be taken back: its TAT is `T`. One
/// thread cancels that booking while another spends one token of key `y` at 0, which evicts
/// `x` (the bucket nearest to full, or idle once the cancel landed) and leaves `y` at TAT `T`:
/// the TAT `x`'s booking left. The cancel lands in `x`'s bucket before the eviction, or finds
/// `x` gone; it must never give the token to `y`. Preemption bound 5 (`TWO_THREADS`).
fn give_back_eviction_model(broken: Broken) {
    let limiter = keyed(2, 1, broken);
    let [x, y, _] = keys_at_home_zero(&limiter);
    let booked = book_to_take_back(&limiter, x, Nanos::ZERO);
    let giver = {
        let limiter = limiter.clone();
        spawn(move || limiter.attach(booked).unwrap().cancel_at(Nanos::ZERO))
    };
    assert!(limiter.at(Nanos::ZERO).check_key(&y).is_ok());
    giver.join().unwrap();
    let y_tokens = limiter.at(Nanos::ZERO).key(&y).available();
    assert_eq!(y_tokens, 1, "a give-back of x was given to y");
}

#[test]
fn a_give_back_racing_an_eviction_never_reaches_another_key() {
    bounded(TWO_THREADS).check(|| give_back_eviction_model(Broken::Nothing));
}

#[test]
#[should_panic(expected = "a give-back of x was given to y")]
fn an_unmasked_tat_gives_a_give_back_to_another_key() {
    bounded(TWO_THREADS).check(|| give_back_eviction_model(Broken::UnmaskedTat));
}

/// Two slots, overflow policy `EvictNearestNew` (the default). Key `x` (burst 2) booked one
/// token at 0, to be taken back (TAT `T`, in slot 0); key `y` holds slot 1, both its tokens
/// spent at 5 (full again at 25). One thread cancels the booking at 0. Another checks key `w`
/// at 0, which finds no room and evicts the bucket nearest to full, `x`'s, then checks `x` at
/// 0 again, which evicts `w`'s and makes `x` a new bucket at TAT `T`: the TAT the booking
/// left. The cancel lands in the bucket it was booked in before that bucket is evicted, or
/// finds it gone (the key absent, or held by a new bucket, a new tenure of the slot): either
/// way, `x` ends with exactly the second thread's token spent. The twin gives back to whatever
/// bucket the key has, without comparing its tenure with the receipt's, and puts the new
/// bucket back to full.
///
/// Both run on threads of their own while the main thread waits, so that which starts first
/// costs no preemption. Preemption bound 4 (`RE_INSERT`): the cancel stalled between its load
/// in the evicted tenure and its compare-and-swap, while the other thread evicts and
/// re-inserts, takes 2; exhaustive search takes more than ten minutes.
fn re_insert_model(broken: Broken) {
    let limiter = keyed(2, 2, broken);
    let [x, y, w] = keys_at_home_zero(&limiter);
    let booked = book_to_take_back(&limiter, x, Nanos::ZERO);
    spend(&limiter, y, 2, 5);
    let giver = {
        let limiter = limiter.clone();
        thread::spawn(move || limiter.attach(booked).unwrap().cancel_at(Nanos::ZERO))
    };
    let churner = {
        let limiter = limiter.clone();
        thread::spawn(move || {
            let at_0 = limiter.at(Nanos::ZERO);
            assert!(at_0.check_key(&w).is_ok());
            assert!(at_0.check_key(&x).is_ok());
        })
    };
    giver.join().unwrap();
    churner.join().unwrap();
    let x_tokens = limiter.at(Nanos::ZERO).key(&x).available();
    assert_eq!(
        x_tokens, 1,
        "a give-back of an evicted bucket reached the key's new one"
    );
}

/// The preemption bound of the re-insert models (see [`re_insert_model`]).
const RE_INSERT: usize = 4;

#[test]
fn a_give_back_racing_an_eviction_and_a_re_insert_gives_nothing_to_the_new_bucket() {
    bounded(RE_INSERT).check(|| re_insert_model(Broken::Nothing));
}

#[test]
#[should_panic(expected = "a give-back of an evicted bucket reached the key's new one")]
fn a_give_back_that_skips_the_tenure_reaches_the_new_bucket() {
    bounded(RE_INSERT).check(|| re_insert_model(Broken::GiveBackToAnyTenure));
}

/// How the first thread of [`duplicate_model`] gives its token back.
#[derive(Clone, Copy)]
enum GiveBack {
    /// `cancel` of a booking made to be taken back (`reserve(1, ZERO)`).
    Cancel,
    /// The rollback of an `all_of` check that another limit refuses.
    Rollback,
}

/// Two slots: `z` in slot 0, spent at 5 (full again at 15), and `w` in slot 1, spent at 0
/// (full again at 10). Key `x` (burst 3) is absent. One thread books a token of `x` at 12 (a
/// booking to be taken back, or the first spend of an `all_of`), when only `w` is idle, so it
/// takes slot 1, and gives the token back (`how`). The other checks `x` at 20, when both are
/// idle, so it takes slot 0 if it scanned before the first thread's claim: until its rescan
/// retracts that claim, slot 0 holds a claim of `x` in front of `x`'s bucket. The give-back
/// must reach the bucket whatever the order: `x` ends with exactly the second thread's token
/// spent. (The give-back's reading, 12, is earlier than the spender's: the burst leaves room
/// for it, so that it is not taken for one beneath a booking that may still be waiting.)
///
/// Both run on threads of their own while the main thread waits, so that which starts first
/// costs no preemption. Preemption bound 3 (`DUPLICATE`): the schedule that loses the
/// give-back needs 3.
fn duplicate_model(how: GiveBack, broken: Broken) {
    let limiter = keyed(3, 2, broken);
    let [z, w, x] = keys_at_home_zero(&limiter);
    spend(&limiter, z, 1, 5);
    spend(&limiter, w, 1, 0);
    let at_12 = Nanos::new(12);
    let giver = {
        let limiter = limiter.clone();
        thread::spawn(move || match how {
            GiveBack::Cancel => {
                let key = limiter.at(at_12).key(&x);
                if let Ok(booked) = key.reserve(1, Duration::ZERO) {
                    booked.cancel_at(at_12);
                }
            }
            GiveBack::Rollback => {
                let spent = Limiter::with_clock(quota(1), ManualClock::new());
                spent.at(at_12).check_n(1).unwrap();
                let key = limiter.at(at_12).key(&x);
                let both: [(&dyn Limit, u32); 2] = [(&key, 1), (&spent, 1)];
                assert!(all_of(&both).at(at_12).check().is_err());
            }
        })
    };
    let spender = {
        let limiter = limiter.clone();
        thread::spawn(move || limiter.at(Nanos::new(20)).check_key(&x).is_ok())
    };
    giver.join().unwrap();
    let spent = u32::from(spender.join().unwrap());
    let tokens = limiter.at(Nanos::new(20)).key(&x).available();
    assert_eq!(tokens, 3 - spent, "the give-back of x was lost");
}

/// The preemption bound of the duplicate-insert models (see [`duplicate_model`]).
const DUPLICATE: usize = 3;

#[test]
fn a_cancel_racing_a_duplicate_insert_reaches_the_bucket() {
    bounded(DUPLICATE).check(|| duplicate_model(GiveBack::Cancel, Broken::Nothing));
}

#[test]
#[should_panic(expected = "the give-back of x was lost")]
fn a_claim_that_hides_the_bucket_loses_a_cancel() {
    bounded(DUPLICATE).check(|| duplicate_model(GiveBack::Cancel, Broken::ClaimHidesBucket));
}

#[test]
fn a_rollback_racing_a_duplicate_insert_reaches_the_bucket() {
    bounded(DUPLICATE).check(|| duplicate_model(GiveBack::Rollback, Broken::Nothing));
}

#[test]
#[should_panic(expected = "the give-back of x was lost")]
fn a_claim_that_hides_the_bucket_loses_a_rollback() {
    bounded(DUPLICATE).check(|| duplicate_model(GiveBack::Rollback, Broken::ClaimHidesBucket));
}

fn quota(burst: u32) -> Quota {
    Quota::try_new(Duration::from_nanos(T), burst).unwrap()
}

/// One thread checks {key x of a keyed limiter, global}, another {global}, each bucket holding
/// one token, all at 0. Whatever the order, each bucket ends with exactly the tokens the
/// admitted checks took: a refused check gives x's token back in the keyed table too. The twin
/// without rollback must fail.
fn all_of_model(rollback: bool) {
    let keyed = keyed(1, 2, Broken::Nothing);
    let global = Arc::new(Limiter::with_clock(quota(1), ManualClock::new()));
    let both = {
        let (keyed, global) = (keyed.clone(), global.clone());
        spawn(move || {
            let x = keyed.at(Nanos::ZERO).key(&7);
            let limits: [(&dyn Limit, u32); 2] = [(&x, 1), (&*global, 1)];
            let admitted = if rollback {
                all_of(&limits).at(Nanos::ZERO).check().is_ok()
            } else {
                check_without_rollback(&limits, Some(Nanos::ZERO))
            };
            u32::from(admitted)
        })
    };
    let alone = u32::from(global.at(Nanos::ZERO).check_n(1).is_ok());
    let both = both.join().unwrap();
    assert!(both + alone <= 1, "global admitted {} > 1", both + alone);
    assert_eq!(
        keyed.at(Nanos::ZERO).key(&7).available(),
        1 - both,
        "TAT is not what the admitted checks alone would leave"
    );
    assert_eq!(global.at(Nanos::ZERO).available(), 1 - both - alone);
}

#[test]
fn a_keyed_bucket_in_a_refused_check_is_rolled_back_exactly() {
    loom::model(|| all_of_model(true));
}

#[test]
#[should_panic(expected = "TAT is not what the admitted checks alone would leave")]
fn a_keyed_bucket_without_rollback_leaks_a_spend() {
    loom::model(|| all_of_model(false));
}
