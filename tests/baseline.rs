//! `MutexBucket` (the tests' exact bucket behind a mutex) against `Limiter`, check by check, on
//! random schedules of checks of every cost at times that mostly move forward (some stale, some
//! exactly at or a nanosecond before the instant the last refusal named), from full or from empty,
//! over quotas from 1 ns to 10 s an interval: both report the same decision, `remaining`,
//! `reset_after` and `retry_after` at every step, and the same tokens available. (Bookings,
//! give-backs and quota changes are replayed through the oracle in `replay.rs`.)

use crate::common::mutex_bucket::MutexBucket;
use crate::common::quota;
use cellrate::{Allowed, Denied, Limiter, ManualClock, Nanos, Quota};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::time::Duration;

/// Everything an outcome reports, field by field, so that a mismatch names the field.
#[derive(Debug, PartialEq, Eq)]
struct Report {
    ok: bool,
    remaining: u32,
    reset_after: Duration,
    retry_after: Option<Duration>,
}

fn report(outcome: Result<Allowed, Denied>) -> Report {
    match outcome {
        Ok(a) => Report {
            ok: true,
            remaining: a.remaining(),
            reset_after: a.reset_after(),
            retry_after: None,
        },
        Err(d) => Report {
            ok: false,
            remaining: d.remaining(),
            reset_after: d.reset_after(),
            retry_after: d.retry_after(),
        },
    }
}

/// A limiter and the mutex bucket on the same quota, both full or both empty at `start`.
struct Pair {
    limiter: Limiter<ManualClock>,
    bucket: MutexBucket<ManualClock>,
}

impl Pair {
    fn new(quota: Quota, empty_at: Option<u64>) -> Pair {
        let clock = ManualClock::new();
        clock.set(Nanos::new(empty_at.unwrap_or(0)));
        let (limiter, bucket) = (
            Limiter::with_clock(quota, clock.clone()),
            MutexBucket::with_clock(quota, clock),
        );
        let empty = empty_at.is_some();
        Pair {
            limiter: limiter.start_empty(empty),
            bucket: bucket.start_empty(empty),
        }
    }

    fn check(&self, cost: u32, now: u64, step: &str) -> Result<Report, TestCaseError> {
        let at = Nanos::new(now);
        let l = report(self.limiter.at(at).check_n(cost));
        let b = report(self.bucket.check_n_at(cost, at));
        prop_assert_eq!(&l, &b, "check of {} at {}", cost, step);
        let (la, ba) = (
            self.limiter.at(at).available(),
            self.bucket.available_at(at),
        );
        prop_assert_eq!(la, ba, "available after {}", step);
        Ok(l)
    }
}

#[derive(Debug, Clone, Copy)]
struct Step {
    amount: u32,
    /// 0..=3: later by a random gap, 4: later by whole tokens, 5: later by at most one
    /// interval, 6: stale (earlier than the latest time, which stays), 7: exactly at, or 1 ns
    /// before, the instant the last denial said to retry at.
    when: u8,
    /// The gap, stale distance or choice, reduced to the quota's scale.
    raw: u64,
}

fn steps(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<Step>> {
    let step = (any::<u32>(), 0..8u8, any::<u64>()).prop_map(|(amount, when, raw)| Step {
        amount,
        when,
        raw,
    });
    prop::collection::vec(step, len)
}

/// Intervals from 1 ns to 10 s (most do not divide a second), bursts 1..=1000, and quotas made
/// by `per_second(n)` (rounded-up intervals, burst n).
fn quotas() -> impl Strategy<Value = Quota> {
    prop_oneof![
        (1..=20u64, 1..=1_000u32).prop_map(|(t, b)| quota(t, b)),
        (1..=10_000_000_000u64, 1..=1_000u32).prop_map(|(t, b)| quota(t, b)),
        (1..=10_000u32).prop_map(Quota::per_second),
        (1..=1_000_000_000u32).prop_map(Quota::per_second),
        (1..=100_000u32, 1..=1_000u32).prop_map(|(n, b)| Quota::per_second(n).with_burst(b)),
    ]
}

/// Runs `steps` on a pair from `start` (full, or empty if `empty`).
fn run(quota: Quota, empty: bool, start: u64, steps: &[Step]) -> Result<(), TestCaseError> {
    let pair = Pair::new(quota, empty.then_some(start));
    let t = quota.emission_interval().as_nanos() as u64;
    let (b, d) = (quota.burst(), quota.replenish_all().as_nanos() as u64);
    let (mut latest, mut retry_at) = (start, None::<u64>);
    for (i, s) in steps.iter().enumerate() {
        let now = match s.when {
            0..=3 => latest + s.raw % (2 * d + 1),
            4 => latest + (s.raw % (2 * u64::from(b) + 1)) * t,
            5 => latest + s.raw % (t + 1),
            6 => latest.saturating_sub(s.raw % (2 * d + 1)),
            _ => retry_at.map_or(latest, |r| r.saturating_sub(s.raw & 1)),
        };
        latest = latest.max(now);
        // 0..=burst + 2 (in u64: a burst near u32::MAX must not overflow), at most u32::MAX.
        let amount = (u64::from(s.amount) % (u64::from(b) + 3)).min(u64::from(u32::MAX)) as u32;
        let outcome = pair.check(amount, now, &format!("step {i} {s:?} now {now}"))?;
        if let Some(wait) = outcome.retry_after {
            retry_at = Some(now.saturating_add(wait.as_nanos() as u64));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn limiter_and_mutex_bucket_agree_at_every_check(
        quota in quotas(),
        empty in any::<bool>(),
        start in prop_oneof![Just(0u64), 0..=1_000_000_000_000u64],
        steps in steps(100..=300),
    ) {
        run(quota, empty, start, &steps)?;
    }
}

#[test]
fn both_admit_eleven_of_a_burst_150_ms_apart_at_capacity_eight() {
    let pair = Pair::new(Quota::per_second(2).with_burst(8), None);
    let mut admitted = 0;
    for i in 0..14 {
        admitted += u32::from(pair.check(1, i * 150_000_000, "burst").unwrap().ok);
    }
    assert_eq!(admitted, 11);
}

#[test]
fn both_answer_a_stale_check_as_of_its_own_time() {
    let pair = Pair::new(quota(10, 5), None);
    assert!(pair.check(5, 1_000, "spend").unwrap().ok);
    let stale = pair.check(1, 990, "stale").unwrap();
    assert_eq!(stale.retry_after, Some(Duration::from_nanos(20)));
    assert!(pair.check(1, 1_010, "fresh").unwrap().ok);
    pair.check(0, 0, "far stale").unwrap();
}

/// The deepest quota, drained: a denied check's need is beyond the depth, still representable.
#[test]
fn both_agree_at_the_deepest_quota() {
    let pair = Pair::new(quota(1 << 60, 4), None);
    assert!(pair.check(4, 0, "drain").unwrap().ok);
    pair.check(1, 0, "a need beyond the depth").unwrap();
}

/// Starting empty less than one depth before the end of the clock.
#[test]
fn both_start_empty_near_the_end_of_the_clock() {
    let start = u64::MAX - 20;
    let pair = Pair::new(quota(10, 5), Some(start));
    pair.check(0, start, "empty near the end").unwrap();
    pair.check(1, start, "a check near the end").unwrap();
}
