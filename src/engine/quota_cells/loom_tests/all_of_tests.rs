//! Models of all-or-nothing checks across several buckets (`all_of`).
//!
//! Threads check overlapping sets of buckets at one instant. Whatever the interleaving, no
//! bucket admits more than its burst, and each bucket's final TAT is exactly
//! `admitted * T`: a refused multi-check leaves every TAT as if it had never run. The twin
//! without rollback must fail; so must a rollback by value that a give-back and a spend came
//! between.

use super::reservation_tests::admitted_at;
use super::{cancel_broken, quota_of, tat, BrokenGiveBack, T};
use crate::loom_tests::{bounded, check_without_rollback};
use crate::{all_of, Limit, Limiter, ManualClock, Nanos};
use core::time::Duration;
use loom::sync::Arc;
use loom::thread;

/// Buckets of interval `T` and the bursts `bursts`, all at 0.
fn buckets(bursts: &[u32]) -> Arc<Vec<Limiter<ManualClock>>> {
    let limiter = |burst| Limiter::with_clock(quota_of(T, burst), ManualClock::new());
    Arc::new(bursts.iter().map(|&b| limiter(b)).collect())
}

/// Checks one token at 0 against the buckets named by `set`; whether it was admitted.
fn check(buckets: &[Limiter<ManualClock>], set: &[usize], rollback: bool) -> bool {
    let limits: Vec<(&dyn Limit, u32)> = set
        .iter()
        .map(|&i| (&buckets[i] as &dyn Limit, 1))
        .collect();
    if rollback {
        all_of(&limits).at(Nanos::ZERO).check().is_ok()
    } else {
        check_without_rollback(&limits, Some(Nanos::ZERO))
    }
}

/// Runs one thread per set, all at `now = 0`, then checks the invariants.
fn model(bursts: &[u32], sets: &'static [&'static [usize]], rollback: bool) {
    let buckets = buckets(bursts);
    let threads: Vec<_> = sets
        .iter()
        .map(|set| {
            let buckets = buckets.clone();
            thread::spawn(move || check(&buckets, set, rollback))
        })
        .collect();
    let admitted: Vec<bool> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    for (i, bucket) in buckets.iter().enumerate() {
        let sets_admitted = sets
            .iter()
            .zip(&admitted)
            .filter(|(set, &ok)| ok && set.contains(&i));
        let admitted = sets_admitted.count() as u64;
        let burst = u64::from(bucket.quota().burst());
        assert!(
            admitted <= burst,
            "bucket {i} admitted {admitted} > burst {burst}"
        );
        assert_eq!(
            tat(bucket),
            admitted * T,
            "bucket {i}: TAT is not what the admitted checks alone would leave"
        );
    }
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

/// An `all_of` rollback that a give-back and a spend came between (ABA on the TAT). `L` has
/// T = 3 ns and burst 2, `G` is drained (one token a second); one `ManualClock` at 0 for
/// every operation. `X` books a token of `L` to be taken back. One thread runs
/// `all_of([L, G]).check()`: it spends in `L`, is refused by `G`, and rolls `L` back, each
/// step at the clock's time. Another cancels `X`, sets the clock to 3 and checks `L` (kept).
/// Only that check is carried out, so at 3 `L` may admit at most one more token.
///
/// With the spend in `L` first and the other thread next, `X`'s cancel gives 3 ns from beneath
/// the spend and the check brings the TAT back to the spend's end: the rollback then finds
/// the TAT its spend left, and by the rule gives nothing (the spend has moved down and is
/// refilled). The twin takes the same steps (a booking of `L` that may be taken back, `G`'s
/// refusal) and rolls back by value, restoring the TAT from before the spend: it admits two
/// more.
fn aba_model(by_value: bool) {
    let clock = ManualClock::new();
    let l = Arc::new(Limiter::with_clock(quota_of(3, 2), clock.clone()));
    let g = Arc::new(Limiter::with_clock(
        quota_of(1_000_000_000, 1),
        clock.clone(),
    ));
    assert!(g.check().is_ok());
    let x = l.reserve(1, Duration::ZERO).unwrap().detach();
    let rolled_back = {
        let (l, g) = (l.clone(), g.clone());
        thread::spawn(move || {
            if by_value {
                let spent = l.reserve(1, Duration::ZERO).unwrap();
                assert!(g.check().is_err(), "G is drained");
                cancel_broken(&l, spent, BrokenGiveBack::ByValue, None);
            } else {
                let refused = all_of(&[(&*l, 1), (&*g, 1)]).check();
                assert!(refused.is_err(), "G is drained");
            }
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
    let more = admitted_at(&l, 3);
    assert!(
        more <= 1,
        "L admitted {more} more beside the check at 3, burst 2"
    );
}

#[test]
fn an_all_of_rollback_that_a_give_back_and_a_spend_came_between_returns_no_more_than_it_holds() {
    loom::model(|| aba_model(false));
}

#[test]
#[should_panic(expected = "more beside the check at 3, burst 2")]
fn an_all_of_rolling_back_by_value_over_admits_after_a_give_back_and_a_spend() {
    loom::model(|| aba_model(true));
}
