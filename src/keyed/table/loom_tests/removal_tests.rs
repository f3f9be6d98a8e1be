//! Models of removals: eviction racing a check, slot reuse after eviction (ABA), and a key
//! checked at a reading earlier than the one its bucket was removed at.

use super::{keyed, keys_at_home_zero, spend, T, TWO_THREADS};
use crate::keyed::table::loom_hooks::Broken;
use crate::loom_tests::{bounded, spawn};
use crate::Nanos;
use core::time::Duration;
use loom::thread;

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

/// What removes `x`'s idle bucket in [`earlier_reading_model`].
#[derive(Clone, Copy)]
enum Removal {
    /// `evict_idle`.
    EvictIdle,
    /// A new key that takes its slot.
    NewKey,
}

/// One slot; key `x` (burst 1) spent its token at 0, so it is full again at `T`. At `T` one
/// thread removes `x`'s bucket, idle then (`how`), while another checks `x` at an earlier
/// reading, `T / 2`. An exact bucket that kept `x` refuses that check (its token comes back at
/// `T`); so must the table, whatever the order: before the removal `x`'s bucket refuses it,
/// and after it the new bucket of `x` starts at the table's floor, the reading of the
/// removal, `T`. The twin's table raises no floor: its new bucket starts full at any reading,
/// and admits `x` at `T / 2`. Exhaustive with `evict_idle`; with a new key, whose insert takes
/// many more steps, preemption bound 5 (`TWO_THREADS`).
fn earlier_reading_model(how: Removal, broken: Broken) {
    let limiter = keyed(1, 1, broken);
    let [x, newcomer, _] = keys_at_home_zero(&limiter);
    spend(&limiter, x, 1, 0);
    let remover = {
        let limiter = limiter.clone();
        thread::spawn(move || match how {
            Removal::EvictIdle => {
                limiter.at(Nanos::new(T)).evict_idle();
            }
            Removal::NewKey => {
                let _ = limiter.at(Nanos::new(T)).check_key(&newcomer);
            }
        })
    };
    let checker = {
        let limiter = limiter.clone();
        thread::spawn(move || limiter.at(Nanos::new(T / 2)).check_key(&x).is_ok())
    };
    remover.join().unwrap();
    let admitted = checker.join().unwrap();
    assert!(
        !admitted,
        "x admitted at {} although its only token comes back at {T}",
        T / 2
    );
}

/// The removal of [`earlier_reading_model`] as `evict_idle` makes it.
fn evicted(broken: Broken) {
    earlier_reading_model(Removal::EvictIdle, broken);
}

/// The removal of [`earlier_reading_model`] by a new key taking the slot.
fn taken_over(broken: Broken) {
    earlier_reading_model(Removal::NewKey, broken);
}

#[test]
fn a_key_evicted_at_one_reading_admits_nothing_more_at_an_earlier_one() {
    loom::model(|| evicted(Broken::Nothing));
}

#[test]
#[should_panic(expected = "although its only token comes back")]
fn a_table_without_a_floor_admits_an_evicted_key_early() {
    loom::model(|| evicted(Broken::IgnoreFloor));
}

#[test]
fn a_key_whose_slot_a_new_key_took_admits_nothing_more_at_an_earlier_reading() {
    bounded(TWO_THREADS).check(|| taken_over(Broken::Nothing));
}

#[test]
#[should_panic(expected = "although its only token comes back")]
fn a_table_without_a_floor_admits_a_key_early_after_its_slot_was_taken() {
    bounded(TWO_THREADS).check(|| taken_over(Broken::IgnoreFloor));
}
