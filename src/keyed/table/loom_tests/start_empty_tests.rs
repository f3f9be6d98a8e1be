//! A model of a new key taking the slot of a full bucket in a table whose keys start empty,
//! while that bucket's key spends: the key never loses a token, whichever lands first.
//!
//! The real protocol on a two-slot table, and two twins with one step broken, which must fail.

use super::{keys_at_home_zero, tiny, T};
use crate::keyed::table::loom_hooks::Broken;
use crate::loom_tests::bounded;
use crate::Nanos;
use loom::thread;

/// Two slots, keys starting empty, burst 2 (a depth of 20). Key `x` was seen at 0 (full at
/// 20, in slot 0) and key `z` at 10 (full at 30, in slot 1). At 20 one thread spends a token
/// of `x`, while another checks a new key `y`, whose only room is `x`'s slot, as long as `x`
/// is full. Whatever the order, `x` loses nothing: its spend lands in its bucket (which is then
/// not full, so `y` is refused for room), or `x` was removed full first and is back full, its
/// spend refused for room (`z` and `y` are not full). So `x`'s tokens at 20 and the tokens it
/// spent add up to its burst. Preemption bound 4: the spend landing between the new key's read
/// of `x`'s bucket and its freeze takes 1.
fn takeover_model(broken: Broken) {
    let limiter = tiny(2, 2, true, broken);
    let [x, z, y] = keys_at_home_zero(&limiter);
    let at = |t: u64| limiter.at(Nanos::new(t));
    assert!(at(0).check_key(&x).is_err(), "x starts empty");
    assert!(at(T).check_key(&z).is_err(), "z starts empty");
    let spender = {
        let limiter = limiter.clone();
        thread::spawn(move || limiter.at(Nanos::new(2 * T)).check_key(&x).is_ok())
    };
    let newcomer = {
        let limiter = limiter.clone();
        thread::spawn(move || {
            let _ = limiter.at(Nanos::new(2 * T)).check_key(&y);
        })
    };
    let spent = u32::from(spender.join().unwrap());
    newcomer.join().unwrap();
    let left = limiter.at(Nanos::new(2 * T)).key(&x).available();
    assert_eq!(left + spent, 2, "x lost tokens to the new key");
}

#[test]
fn a_new_key_taking_a_full_buckets_slot_under_start_empty_costs_its_key_nothing() {
    bounded(4).check(|| takeover_model(Broken::Nothing));
}

#[test]
#[should_panic(expected = "x lost tokens to the new key")]
fn a_new_key_removing_a_bucket_not_full_under_start_empty_empties_its_key() {
    bounded(4).check(|| takeover_model(Broken::EvictNotFullUnderStartEmpty));
}

#[test]
#[should_panic(expected = "x lost tokens to the new key")]
fn a_takeover_without_freezing_the_tat_under_start_empty_loses_the_spend() {
    bounded(4).check(|| takeover_model(Broken::EvictWithoutFreeze));
}
