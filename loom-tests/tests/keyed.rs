//! Models of the keyed table: concurrent inserts of one new key, eviction racing a check, slot
//! reuse after eviction (ABA), a refund racing the eviction of its key, and a refund or a
//! rollback racing a duplicate insert of its key.
//!
//! Each model runs the real protocol on a tiny table (one or two slots, every key's window
//! covering all of them) and has a twin with one step deliberately broken, which must fail. The
//! slot words are a sequentially consistent stand-in (every operation a `SeqCst`
//! read-modify-write, src/engine/sync.rs), so these models check the protocol under sequential
//! consistency.
#![cfg(loom)]

use cellrate::{all_of, Broken, KeyedLimiter, Limit, Limiter, ManualClock, Nanos, Quota};
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
        .check_key_n_with_quota_at(&key, 1, &quota, Nanos::ZERO)
        .unwrap();
}

/// Threads spending one token of the same new key `x`, one thread per `now` in `nows`, in a
/// table of two slots: `z` (full again at 8) then `y` (full again at 6). A thread at 10 sees
/// both idle and claims the first, `z`'s; a thread at 5 sees neither idle and evicts the one
/// nearest to full, `y`'s. So the inserters race for different slots. Returns how many spends
/// were admitted, after checking that `x` ended in exactly one slot.
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
        thread::spawn(move || {
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
        thread::spawn(move || {
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

/// The preemption bound of the models of two threads whose runs are long (inserts, reuse).
/// Exhaustive search of them takes hours; 5 takes about 15 s, 6 about 80 s.
const TWO_THREADS: usize = 5;

/// One slot. Key `x` (burst 2) spent one token at 0: its TAT is `T`. One thread refunds that
/// token of `x` (a `rewrite` of its TAT) while another spends one token of key `y` at 0, which
/// evicts `x` (the bucket nearest to full) and leaves `y` at TAT `T`: the TAT `x` had. The
/// refund lands in `x`'s bucket before the eviction, or finds `x` gone; it must never give the
/// token to `y`.
fn refund_model(broken: Broken) {
    let limiter = keyed(2, 1, broken);
    let [x, y, _] = keys_at_home_zero(&limiter);
    limiter.check_key_n_at(&x, 1, Nanos::ZERO).unwrap();
    let refunder = {
        let limiter = limiter.clone();
        thread::spawn(move || limiter.key(&x).refund_n(1)) // the clock reads 0
    };
    assert!(limiter.check_key_n_at(&y, 1, Nanos::ZERO).is_ok());
    refunder.join().unwrap();
    let y_tokens = limiter.key(&y).available_at(Nanos::ZERO);
    assert_eq!(y_tokens, 1, "a refund of x was given to y");
}

#[test]
fn a_refund_racing_an_eviction_never_reaches_another_key() {
    bounded(TWO_THREADS).check(|| refund_model(Broken::Nothing));
}

#[test]
#[should_panic(expected = "a refund of x was given to y")]
fn an_unmasked_tat_gives_a_refund_to_another_key() {
    bounded(TWO_THREADS).check(|| refund_model(Broken::UnmaskedTat));
}

/// How the first thread of [`duplicate_model`] gives its token back.
#[derive(Clone, Copy)]
enum GiveBack {
    /// `refund_n` after an admitted check.
    Refund,
    /// The rollback of an `all_of` check that another limit refuses.
    Rollback,
}

/// Two slots: `z` in slot 0, full again at 8, and `w` in slot 1, full again at 3. Key `x`
/// (burst 2) is absent. One thread checks `x` at 5, when only `w` is idle, so it takes slot 1,
/// and gives the token back (`how`). The other checks `x` at 10, when both are idle, so it
/// takes slot 0 if it scanned before the first thread's claim: until its rescan retracts that
/// claim, slot 0 holds a claim of `x` in front of `x`'s bucket. The give-back must reach the
/// bucket whatever the order: `x` ends with exactly the second thread's token spent.
///
/// Both run on threads of their own while the main thread waits, so that which starts first
/// costs no preemption: the schedule that loses the give-back needs 3.
fn duplicate_model(how: GiveBack, broken: Broken) {
    let limiter = keyed(2, 2, broken);
    let [z, w, x] = keys_at_home_zero(&limiter);
    fill(&limiter, z, 8);
    fill(&limiter, w, 3);
    let at_5 = Nanos::new(5);
    let giver = {
        let limiter = limiter.clone();
        thread::spawn(move || match how {
            GiveBack::Refund => {
                if limiter.check_key_n_at(&x, 1, at_5).is_ok() {
                    limiter.key(&x).refund_n_at(1, at_5);
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
fn a_refund_racing_a_duplicate_insert_reaches_the_bucket() {
    bounded(DUPLICATE).check(|| duplicate_model(GiveBack::Refund, Broken::Nothing));
}

#[test]
#[should_panic(expected = "the give-back of x was lost")]
fn a_claim_that_hides_the_bucket_loses_a_refund() {
    bounded(DUPLICATE).check(|| duplicate_model(GiveBack::Refund, Broken::ClaimHidesBucket));
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

/// A model runner with a preemption bound.
fn bounded(preemptions: usize) -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder
}
