//! Models of all-or-nothing checks across several buckets (`cellrate::all_of`).
//!
//! Threads check overlapping sets of buckets at one instant. Whatever the interleaving, no
//! bucket admits more than its burst, and each bucket's final TAT is exactly
//! `admitted * T`: a refused multi-check leaves every TAT as if it had never run. The twin
//! without rollback must fail.
#![cfg(loom)]

use cellrate::{all_of, GiveBackFault, Limit, Limiter, ManualClock, Nanos, Quota};
use cellrate_loom_tests::{bounded, spawn};
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

const T: u64 = 10; // emission interval of every model, in ns

struct World {
    buckets: Vec<Limiter<ManualClock>>,
    admitted: Vec<AtomicU32>,
}

impl World {
    fn new(bursts: &[u32]) -> Arc<World> {
        let limiter = |burst| {
            let quota = Quota::try_new(Duration::from_nanos(T), burst).unwrap();
            Limiter::with_clock(quota, ManualClock::new())
        };
        Arc::new(World {
            buckets: bursts.iter().map(|&b| limiter(b)).collect(),
            admitted: bursts.iter().map(|_| AtomicU32::new(0)).collect(),
        })
    }

    /// Checks one token against the buckets named by `set`, and counts the admissions.
    fn check(&self, set: &[usize], rollback: bool) {
        let limits: Vec<&dyn Limit> = set
            .iter()
            .map(|&i| &self.buckets[i] as &dyn Limit)
            .collect();
        let check = all_of(&limits);
        let outcome = if rollback {
            check.check_n_at(1, Nanos::ZERO)
        } else {
            check.check_n_at_without_rollback(1, Nanos::ZERO)
        };
        if outcome.is_ok() {
            for &i in set {
                // Relaxed: counters read after every thread is joined.
                self.admitted[i].fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn assert_exact(&self) {
        for (i, bucket) in self.buckets.iter().enumerate() {
            let admitted = self.admitted[i].load(Ordering::Relaxed);
            let burst = bucket.quota().burst();
            assert!(
                admitted <= burst,
                "bucket {i} admitted {admitted} > burst {burst}"
            );
            assert_eq!(
                bucket.theoretical_arrival(),
                Nanos::new(u64::from(admitted) * T),
                "bucket {i}: TAT is not what the admitted checks alone would leave"
            );
        }
    }
}

/// Runs one thread per set, all at `now = 0`, then checks the invariants.
fn model(bursts: &[u32], sets: &'static [&'static [usize]], rollback: bool) {
    let world = World::new(bursts);
    let threads: Vec<_> = sets
        .iter()
        .map(|set| {
            let world = world.clone();
            thread::spawn(move || world.check(set, rollback))
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    world.assert_exact();
}

// Two threads: {A, B} against {B}, with B holding one token: one of them must be refused, and
// a refusal of {A, B} must give A's token back.
const TWO: &[&[usize]] = &[&[0, 1], &[1]];

#[test]
fn two_overlapping_checks_roll_back_exactly() {
    loom::model(|| model(&[1, 1], TWO, true));
}

#[test]
#[should_panic(expected = "TAT is not what the admitted checks alone would leave")]
fn two_overlapping_checks_without_rollback_leak_a_spend() {
    loom::model(|| model(&[1, 1], TWO, false));
}

// Three threads over three buckets in different orders; A has room for two. Preemption bound
// 2: exhaustive search of three threads takes long.
const THREE: &[&[usize]] = &[&[0, 1], &[1, 2], &[2, 0]];

#[test]
fn three_overlapping_checks_never_over_admit() {
    bounded(2).check(|| model(&[2, 1, 1], THREE, true));
}

#[test]
#[should_panic(expected = "TAT is not what the admitted checks alone would leave")]
fn three_overlapping_checks_without_rollback_leak_a_spend() {
    bounded(2).check(|| model(&[2, 1, 1], THREE, false));
}

/// One thread checks {key x of a keyed limiter, global}, another {global}, each bucket holding
/// one token. Whatever the order, each bucket ends with exactly the tokens the admitted checks
/// took: a refused check gives x's token back in the keyed table too.
fn keyed_model(rollback: bool) {
    use cellrate::{Broken, KeyedLimiter};
    let quota = Quota::try_new(Duration::from_nanos(T), 1).unwrap();
    let keyed = Arc::new(KeyedLimiter::<u64, _>::loom_tiny(
        quota,
        ManualClock::new(),
        2,
        2,
        Broken::Nothing,
    ));
    let global = Arc::new(Limiter::with_clock(quota, ManualClock::new()));
    let both = {
        let (keyed, global) = (keyed.clone(), global.clone());
        spawn(move || {
            let x = keyed.key(&7);
            let limits: [&dyn Limit; 2] = [&x, &*global];
            let check = all_of(&limits);
            let outcome = if rollback {
                check.check_n_at(1, Nanos::ZERO)
            } else {
                check.check_n_at_without_rollback(1, Nanos::ZERO)
            };
            outcome.is_ok() as u32
        })
    };
    let alone = global.check_n_at(1, Nanos::ZERO).is_ok() as u32;
    let both = both.join().unwrap();
    assert!(both + alone <= 1, "global admitted {} > 1", both + alone);
    assert_eq!(
        keyed.key(&7).available_at(Nanos::ZERO),
        1 - both,
        "TAT is not what the admitted checks alone would leave"
    );
    assert_eq!(global.available_at(Nanos::ZERO), 1 - both - alone);
}

#[test]
fn a_keyed_bucket_in_a_refused_check_is_rolled_back_exactly() {
    loom::model(|| keyed_model(true));
}

#[test]
#[should_panic(expected = "TAT is not what the admitted checks alone would leave")]
fn a_keyed_bucket_without_rollback_leaks_a_spend() {
    loom::model(|| keyed_model(false));
}

/// An `all_of` rollback that a give-back and a spend came between (ABA on the TAT). `L` has
/// T = 3 ns and burst 2, `G` is drained (one token a second); one `ManualClock` at 0 for
/// every operation. `X` books a token of `L` to be taken back. One thread runs
/// `all_of([L, G]).check_n(1)`: it spends in `L`, is refused by `G`, and rolls `L` back, each
/// step at the clock's time. Another cancels `X`, sets the clock to 3 and checks `L` (kept).
/// Only that check is carried out, so at 3 `L` may admit at most one more token.
///
/// With the spend in `L` first and the other thread next, `X`'s cancel gives 3 ns from beneath
/// the spend and the check brings the TAT back to the spend's end: the rollback then finds
/// the TAT its spend left, and by the rule gives nothing (the spend has moved down and is
/// refilled). The twin rolls back by value, restoring the TAT from before the spend, and
/// admits two more.
fn aba_model(fault: Option<GiveBackFault>) {
    let clock = ManualClock::new();
    let l = Arc::new(Limiter::with_clock(
        Quota::try_new(Duration::from_nanos(3), 2).unwrap(),
        clock.clone(),
    ));
    let g = Arc::new(Limiter::with_clock(
        Quota::try_new(Duration::from_secs(1), 1).unwrap(),
        clock.clone(),
    ));
    assert!(g.check().is_ok());
    let x = l.reserve_n(1, Duration::ZERO).unwrap().detach();
    let rolled_back = {
        let (l, g) = (l.clone(), g.clone());
        thread::spawn(move || {
            let limits: [&dyn Limit; 2] = [&*l, &*g];
            let check = all_of(&limits);
            let outcome = match fault {
                None => check.check_n(1),
                Some(fault) => check.check_n_rolling_back_faulty(1, None, fault),
            };
            assert!(outcome.is_err(), "G is drained");
        })
    };
    let kept = {
        let l = l.clone();
        thread::spawn(move || {
            l.attach(x).unwrap().cancel();
            clock.set(Nanos::new(3));
            assert!(l.check().is_ok(), "a token was there for the check");
        })
    };
    rolled_back.join().unwrap();
    kept.join().unwrap();
    let more = (0..)
        .take_while(|_| l.check_n_at(1, Nanos::new(3)).is_ok())
        .count();
    assert!(
        more <= 1,
        "L admitted {more} more beside the check at 3, burst 2"
    );
}

#[test]
fn an_all_of_rollback_that_a_give_back_and_a_spend_came_between_returns_no_more_than_it_holds() {
    loom::model(|| aba_model(None));
}

#[test]
#[should_panic(expected = "more beside the check at 3, burst 2")]
fn an_all_of_rolling_back_by_value_over_admits_after_a_give_back_and_a_spend() {
    loom::model(|| aba_model(Some(GiveBackFault::ByValue)));
}
