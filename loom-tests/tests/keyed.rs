//! Models of the keyed table: concurrent inserts of one new key, eviction racing a check, slot
//! reuse after eviction (ABA), a cancel racing the eviction of its key (and its re-insert),
//! and a cancel or a rollback racing a duplicate insert of its key.
//!
//! Each model runs the real protocol on a tiny table (one or two slots, every key's window
//! covering all of them) and has a twin with one step deliberately broken, which must fail. The
//! slot words are a sequentially consistent stand-in (every operation a `SeqCst`
//! read-modify-write, src/sync.rs), so these models check the protocol under sequential
//! consistency.
#![cfg(loom)]

use cellrate::{all_of, Broken, KeyedLimiter, Limit, Limiter, ManualClock, Nanos, Quota, Ticket};
use cellrate_loom_tests::{bounded, spawn};
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

const T: u64 = 10; // emission interval of every model, in ns

type Keyed = KeyedLimiter<u64, ManualClock>;

fn keyed(burst: u32, slots: usize, broken: Broken) -> Arc<Keyed> {
    let quota = Quota::try_new(Duration::from_nanos(T), burst).unwrap();
    Arc::new(KeyedLimiter::loom_tiny(
        quota,
        ManualClock::new(),
        slots,
        slots,
        broken,
    ))
}

/// The first three keys whose home is slot 0, so that their windows are in the same order.
fn keys_at_home_zero(limiter: &Keyed) -> [u64; 3] {
    let mut keys = (0..).filter(|k| limiter.loom_home(k) == 0);
    [(); 3].map(|()| keys.next().unwrap())
}

/// Spends one token of `key` at 0 under a quota of burst 1 and interval `interval`, so that
/// its bucket is full again at `interval`.
fn fill(limiter: &Keyed, key: u64, interval: u64) {
    let quota = Quota::try_new(Duration::from_nanos(interval), 1).unwrap();
    limiter
        .key(&key)
        .with_quota(&quota)
        .check_n_at(1, Nanos::ZERO)
        .unwrap();
}

/// Threads spending one token of the same new key `x`, one thread per `now` in `nows`, in a
/// table of two slots: `z` (full again at 8) then `y` (full again at 6). A thread at 10 sees
/// both idle and claims the first, `z`'s; a thread at 5 sees neither idle and evicts the one
/// nearest to full, `y`'s. So the inserters race for different slots. Returns how many spends
/// were admitted, after checking that `x` ended in exactly one slot. Preemption bound 5
/// (`TWO_THREADS`) for two threads, 2 for three.
fn insert_model(burst: u32, nows: &[u64], broken: Broken) -> u32 {
    let limiter = keyed(burst, 2, broken);
    let [z, y, x] = keys_at_home_zero(&limiter);
    fill(&limiter, z, 8);
    fill(&limiter, y, 6);
    let admitted = Arc::new(AtomicU32::new(0));
    let handles: Vec<_> = nows
        .iter()
        .map(|&now| {
            let (limiter, admitted) = (limiter.clone(), admitted.clone());
            thread::spawn(move || {
                if limiter.check_key_n_at(&x, 1, Nanos::new(now)).is_ok() {
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
    let held = limiter.loom_slots_holding(&x);
    assert_eq!(held, 1, "the key is held in {held} slots");
    admitted
}

#[test]
fn two_inserters_of_one_key_make_one_bucket() {
    // One bucket of burst 1: at 5 then 10 or at 10 then 5, the second is denied.
    bounded(TWO_THREADS).check(|| assert_eq!(insert_model(1, &[10, 5], Broken::Nothing), 1));
}

#[test]
#[should_panic(expected = "admitted 2 > burst 1")]
fn two_inserters_skipping_the_rescan_make_two_buckets() {
    bounded(TWO_THREADS).check(|| {
        insert_model(1, &[10, 5], Broken::SkipRescan);
    });
}

#[test]
#[should_panic(expected = "admitted 2 > burst 1")]
fn two_inserters_initialising_without_the_recheck_lose_a_spend() {
    // A late initialisation overwrites the first spend with UNPUBLISHED; the next spend then
    // publishes a new bucket.
    bounded(TWO_THREADS).check(|| {
        insert_model(1, &[10, 5], Broken::InitWithoutRecheck);
    });
}

#[test]
fn three_inserters_of_one_key_make_one_bucket() {
    bounded(2).check(|| {
        insert_model(2, &[10, 5, 10], Broken::Nothing);
    });
}

#[test]
#[should_panic(expected = "admitted 3 > burst 2")]
fn three_inserters_skipping_the_rescan_over_admit() {
    bounded(2).check(|| {
        insert_model(2, &[10, 5, 10], Broken::SkipRescan);
    });
}

/// Key `x` (burst 2) spent one token at 0, so it is full again at `T`. At `T` one thread
/// spends a token of `x` while another evicts idle keys. Whatever the order, `x` ends with one
/// token spent at `T`: the eviction either happened first (the spend then made a fresh,
/// full bucket) or found the bucket no longer idle.
fn evict_model(broken: Broken) {
    let limiter = keyed(2, 1, broken);
    limiter.check_key_n_at(&7, 1, Nanos::ZERO).unwrap();
    let spender = {
        let limiter = limiter.clone();
        spawn(move || {
            assert!(limiter.check_key_n_at(&7, 1, Nanos::new(T)).is_ok());
        })
    };
    limiter.evict_idle_at(Nanos::new(T));
    spender.join().unwrap();
    assert_eq!(limiter.key(&7).available_at(Nanos::new(T)), 1, "lost spend");
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
/// two slots, key `w` holds slot 1 and is not idle at `T`, so that every look-up takes the
/// grouped read of both slots. One thread spends `x` at `T`. Another evicts idle keys at `T`,
/// then spends one token of key `y` at 0, which leaves `(y, T)` in slot 0 if it gets it: the
/// same TAT as `x` had. A spend of `x` must never land in `y`'s bucket: `y` is full at `T`
/// whatever happened (its bucket was reclaimed, or it kept its one spend made at 0).
/// Preemption bound 5 (`TWO_THREADS`).
fn reuse_model(slots: usize, broken: Broken) {
    let limiter = keyed(2, slots, broken);
    let [x, y, w] = keys_at_home_zero(&limiter);
    limiter.check_key_n_at(&x, 1, Nanos::ZERO).unwrap();
    if slots == 2 {
        fill(&limiter, w, 1_000);
    }
    let spender = {
        let limiter = limiter.clone();
        // Denied if `y` is being inserted at that instant (no room, nothing to evict): fine.
        spawn(move || {
            let allowed = limiter.check_key_n_at(&x, 1, Nanos::new(T)).is_ok();
            assert!(allowed || slots == 1, "x denied with a bucket to evict");
        })
    };
    limiter.evict_idle_at(Nanos::new(T));
    // Denied if `x` is being inserted at that instant (no room, nothing to evict): fine.
    let _ = limiter.check_key_n_at(&y, 1, Nanos::ZERO);
    spender.join().unwrap();
    let y_tokens = limiter.key(&y).available_at(Nanos::new(T));
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
/// UNPUBLISHED, or `y`'s TAT) with the mask of the one before it, and deny `x`.
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

/// The preemption bound of the models of two threads whose runs are long (inserts, reuse,
/// eviction of a booked key).
/// Exhaustive search of them takes hours; 5 takes about 15 s, 6 about 80 s.
const TWO_THREADS: usize = 5;

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
    assert!(limiter.check_key_n_at(&y, 1, Nanos::ZERO).is_ok());
    giver.join().unwrap();
    let y_tokens = limiter.key(&y).available_at(Nanos::ZERO);
    assert_eq!(y_tokens, 1, "a give-back of x was given to y");
}

/// Books one token of `key` at `now` that may be taken back (`reserve_n_at(1, ZERO)`),
/// detached so that another thread can cancel it.
fn book_to_take_back(limiter: &Keyed, key: u64, now: Nanos) -> Ticket {
    limiter
        .key(&key)
        .reserve_n_at(1, Duration::ZERO, now)
        .unwrap()
        .detach()
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
/// token at 0, to be taken back (TAT `T`, in slot 0); key `y` holds slot 1, full again at
/// 1,000. One thread cancels the booking at 0. Another checks key `w` at 0, which finds no
/// room and evicts the bucket nearest to full, `x`'s, then checks `x` at 0 again, which evicts
/// `w`'s and makes `x` a new bucket at TAT `T`: the TAT the booking left. The cancel lands in
/// the bucket it was booked in before that bucket is evicted, or finds it gone (the key absent,
/// or held by a new bucket, a new tenure of the slot): either way, `x` ends with exactly the
/// second thread's token spent. The twin gives back to whatever bucket the key has, without
/// comparing its tenure with the receipt's, and puts the new bucket back to full.
///
/// Both run on threads of their own while the main thread waits, so that which starts first
/// costs no preemption. Preemption bound 4 (`RE_INSERT`): the cancel stalled between its load
/// in the evicted tenure and its compare-and-swap, while the other thread evicts and
/// re-inserts, takes 2; exhaustive search takes more than ten minutes.
fn re_insert_model(broken: Broken) {
    let limiter = keyed(2, 2, broken);
    let [x, y, w] = keys_at_home_zero(&limiter);
    let booked = book_to_take_back(&limiter, x, Nanos::ZERO);
    fill(&limiter, y, 1_000);
    let giver = {
        let limiter = limiter.clone();
        thread::spawn(move || limiter.attach(booked).unwrap().cancel_at(Nanos::ZERO))
    };
    let churner = {
        let limiter = limiter.clone();
        thread::spawn(move || {
            assert!(limiter.check_key_n_at(&w, 1, Nanos::ZERO).is_ok());
            assert!(limiter.check_key_n_at(&x, 1, Nanos::ZERO).is_ok());
        })
    };
    giver.join().unwrap();
    churner.join().unwrap();
    let x_tokens = limiter.key(&x).available_at(Nanos::ZERO);
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
    /// `cancel` of a booking made to be taken back (`reserve_n_at(1, ZERO)`).
    Cancel,
    /// The rollback of an `all_of` check that another limit refuses.
    Rollback,
}

/// Two slots: `z` in slot 0, full again at 8, and `w` in slot 1, full again at 3. Key `x`
/// (burst 2) is absent. One thread books a token of `x` at 5 (a booking to be taken back, or
/// the first spend of an `all_of`), when only `w` is idle, so it takes slot 1, and gives the
/// token back (`how`). The other checks `x` at 10, when both are idle, so it takes slot 0 if
/// it scanned before the first thread's claim: until its rescan retracts that claim, slot 0
/// holds a claim of `x` in front of `x`'s bucket. The give-back must reach the bucket whatever
/// the order: `x` ends with exactly the second thread's token spent.
///
/// Both run on threads of their own while the main thread waits, so that which starts first
/// costs no preemption. Preemption bound 3 (`DUPLICATE`): the schedule that loses the
/// give-back needs 3.
fn duplicate_model(how: GiveBack, broken: Broken) {
    let limiter = keyed(2, 2, broken);
    let [z, w, x] = keys_at_home_zero(&limiter);
    fill(&limiter, z, 8);
    fill(&limiter, w, 3);
    let at_5 = Nanos::new(5);
    let giver = {
        let limiter = limiter.clone();
        thread::spawn(move || match how {
            GiveBack::Cancel => {
                let key = limiter.key(&x);
                if let Ok(booked) = key.reserve_n_at(1, Duration::ZERO, at_5) {
                    booked.cancel_at(at_5);
                }
            }
            GiveBack::Rollback => {
                let quota = Quota::try_new(Duration::from_nanos(T), 1).unwrap();
                let spent = Limiter::with_clock(quota, ManualClock::new());
                spent.check_n_at(1, at_5).unwrap();
                let key = limiter.key(&x);
                let limits: [&dyn Limit; 2] = [&key, &spent];
                assert!(all_of(&limits).check_n_at(1, at_5).is_err());
            }
        })
    };
    let spender = {
        let limiter = limiter.clone();
        thread::spawn(move || limiter.check_key_n_at(&x, 1, Nanos::new(10)).is_ok())
    };
    giver.join().unwrap();
    let spent = u32::from(spender.join().unwrap());
    let tokens = limiter.key(&x).available_at(Nanos::new(10));
    assert_eq!(tokens, 2 - spent, "the give-back of x was lost");
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
