//! Models of removals: eviction racing a check, and slot reuse after eviction (ABA).

use super::{keyed, keys_at_home_zero, spend, T, TWO_THREADS};
use crate::keyed::table::loom_hooks::Broken;
use crate::loom_tests::{bounded, spawn};
use crate::Nanos;
use core::time::Duration;

/// Key `x` (burst 2) spent one token at 0, so it is full again at `T`. At `T` one thread
/// spends a token of `x` while another evicts idle keys. Whatever the order, `x` ends with one
/// token spent at `T`: the eviction either happened first (the spend then made a fresh,
/// full bucket) or found the bucket no longer idle.
fn evict_model(broken: Broken) {
    let limiter = keyed(2, 1, broken);
    spend(&limiter, 7, 1, 0);
    let spender = {
        let limiter = limiter.clone();
        spawn(move || {
            assert!(limiter.at(Nanos::new(T)).check_key(&7).is_ok());
        })
    };
    limiter.at(Nanos::new(T)).evict_idle();
    spender.join().unwrap();
    let left = limiter.at(Nanos::new(T)).key(&7).available();
    assert_eq!(left, 1, "lost spend");
}

#[test]
fn eviction_racing_a_check_loses_no_spend() {
    loom::model(|| evict_model(Broken::Nothing));
}

#[test]
#[should_panic(expected = "lost spend")]
fn eviction_without_freezing_the_tat_loses_the_spend() {
    loom::model(|| evict_model(Broken::EvictWithoutFreeze));
}

/// `slots` slots (1 or 2). Key `x` (burst 2) spent one token at 0: `(x, T)` in slot 0; with
/// two slots, key `w` holds slot 1 (both its tokens spent at 5, so not idle at `T` and
/// further from full than `x` after its spend), so that every look-up takes the grouped read
/// of both slots. One thread spends `x` at `T`. Another evicts idle keys at `T`, then books a
/// token of key `y` at 0 and cancels it, which leaves `(y, T)` in slot 0 if it gets it: the
/// floor `T` that `y`'s new bucket starts from (the time of the eviction), the TAT `x` had. A
/// spend of `x` must never land in `y`'s bucket: `y` is full at `T` whatever happened (its
/// bucket was removed, or it holds its cancelled booking's TAT). Preemption bound 5
/// (`TWO_THREADS`).
fn reuse_model(slots: usize, broken: Broken) {
    let limiter = keyed(2, slots, broken);
    let [x, y, w] = keys_at_home_zero(&limiter);
    spend(&limiter, x, 1, 0);
    if slots == 2 {
        spend(&limiter, w, 2, 5);
    }
    let spender = {
        let limiter = limiter.clone();
        // Denied if `y` is being inserted at that instant (no room, nothing to evict): fine.
        spawn(move || {
            let allowed = limiter.at(Nanos::new(T)).check_key(&x).is_ok();
            assert!(allowed || slots == 1, "x denied with a bucket to evict");
        })
    };
    limiter.at(Nanos::new(T)).evict_idle();
    // Refused if `x` is being inserted at that instant (no room, nothing to evict): fine.
    if let Ok(booked) = limiter.at(Nanos::ZERO).key(&y).reserve(1, Duration::ZERO) {
        booked.cancel_at(Nanos::ZERO);
    }
    spender.join().unwrap();
    let y_tokens = limiter.at(Nanos::new(T)).key(&y).available();
    assert_eq!(y_tokens, 2, "a spend of x was charged to y");
}

#[test]
fn slot_reuse_cannot_charge_one_key_for_another() {
    bounded(TWO_THREADS).check(|| reuse_model(1, Broken::Nothing));
}

#[test]
#[should_panic(expected = "a spend of x was charged to y")]
fn an_unmasked_tat_charges_one_key_for_another() {
    bounded(TWO_THREADS).check(|| reuse_model(1, Broken::UnmaskedTat));
}

/// The reuse model through the grouped look-up of two slots: the one-slot models never take
/// the grouped path, and the insert models start with no EMPTY slot. With two slots there is
/// always a bucket to evict, so the spend of `x` must be allowed too.
#[test]
fn slot_reuse_through_the_grouped_look_up_cannot_charge_one_key_for_another() {
    bounded(TWO_THREADS).check(|| reuse_model(2, Broken::Nothing));
}

/// A look-up that does not read K again after W can decode a W of the next tenure (here
/// UNPUBLISHED, or one of `y`'s TATs) with the mask of the one before it, and deny `x`.
#[test]
#[should_panic(expected = "x denied with a bucket to evict")]
fn a_look_up_without_the_recheck_decodes_another_tenure() {
    bounded(TWO_THREADS).check(|| reuse_model(2, Broken::LookupWithoutRecheck));
}

#[test]
#[should_panic(expected = "a spend of x was charged to y")]
fn an_unmasked_tat_charges_one_key_for_another_through_the_grouped_look_up() {
    bounded(TWO_THREADS).check(|| reuse_model(2, Broken::UnmaskedTat));
}
