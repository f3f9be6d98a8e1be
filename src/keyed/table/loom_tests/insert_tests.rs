//! Models of inserts: threads inserting one new key into different free slots.

use super::{keyed, keys_at_home_zero, slots_holding, spend, TWO_THREADS};
use crate::keyed::table::loom_hooks::Broken;
use crate::loom_tests::{admitted_on_threads, bounded};
use crate::Nanos;

/// Threads spending one token of the same new key `x`, one thread per `now` in `nows`, in a
/// table of two slots: `z` (spent at 3, so full again at 13) then `y` (spent at 1, full again
/// at 11). A thread at 14 sees both idle and claims the first, `z`'s; a thread at 5 sees
/// neither idle and evicts the one nearest to full, `y`'s. So the inserters race for
/// different slots. Returns how many spends were admitted, after checking that `x` ended in
/// exactly one slot. Preemption bound 5 (`TWO_THREADS`) for two threads, 2 for three.
fn insert_model(burst: u32, nows: &[u64], broken: Broken) -> u32 {
    let limiter = keyed(burst, 2, broken);
    let [z, y, x] = keys_at_home_zero(&limiter);
    spend(&limiter, z, 1, 3);
    spend(&limiter, y, 1, 1);
    let admitted = admitted_on_threads(nows.iter().map(|&now| {
        let limiter = limiter.clone();
        move || limiter.at(Nanos::new(now)).check_key(&x).is_ok()
    }));
    assert!(admitted <= burst, "admitted {admitted} > burst {burst}");
    let held = slots_holding(&limiter, x);
    assert_eq!(held, 1, "the key is held in {held} slots");
    admitted
}

#[test]
fn two_inserters_of_one_key_make_one_bucket() {
    // One bucket of burst 1: at 5 then 14 or at 14 then 5, the second is denied.
    bounded(TWO_THREADS).check(|| assert_eq!(insert_model(1, &[5, 14], Broken::Nothing), 1));
}

#[test]
#[should_panic(expected = "admitted 2 > burst 1")]
fn two_inserters_skipping_the_rescan_make_two_buckets() {
    bounded(TWO_THREADS).check(|| {
        insert_model(1, &[5, 14], Broken::SkipRescan);
    });
}

#[test]
#[should_panic(expected = "admitted 2 > burst 1")]
fn two_inserters_initialising_without_the_recheck_lose_a_spend() {
    // A late initialisation overwrites the first spend with UNPUBLISHED; the next spend then
    // publishes a new bucket.
    bounded(TWO_THREADS).check(|| {
        insert_model(1, &[5, 14], Broken::InitWithoutRecheck);
    });
}

#[test]
fn three_inserters_of_one_key_make_one_bucket() {
    bounded(2).check(|| {
        insert_model(2, &[5, 14, 14], Broken::Nothing);
    });
}

#[test]
#[should_panic(expected = "admitted 3 > burst 2")]
fn three_inserters_skipping_the_rescan_over_admit() {
    bounded(2).check(|| {
        insert_model(2, &[5, 14, 14], Broken::SkipRescan);
    });
}
