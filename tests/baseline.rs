//! `baseline::MutexBucket` against `Limiter`: the same decision and the same figures at every
//! step of random schedules (times that mostly move forward, sometimes go back), plus a few
//! explicit schedules.

use crate::common;

use cellrate::baseline::MutexBucket;
use cellrate::{Allowed, Denied, Limiter, ManualClock, Nanos, Quota};
use common::quota;
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

/// The limiter and the mutex bucket on the same quota and start.
struct Pair {
    limiter: Limiter<ManualClock>,
    bucket: MutexBucket<ManualClock>,
}

impl Pair {
    fn new(quota: Quota, empty_at: Option<u64>) -> Pair {
        let limiter = Limiter::with_clock(quota, ManualClock::new());
        let bucket = MutexBucket::with_clock(quota, ManualClock::new());
        match empty_at {
            Some(t) => Pair {
                limiter: limiter.start_empty_at(Nanos::new(t)),
                bucket: bucket.start_empty_at(Nanos::new(t)),
            },
            None => Pair { limiter, bucket },
        }
    }

    /// Checks `cost` at `now` on both; fails unless they report the same.
    fn check(&self, cost: u32, now: u64, step: &str) -> Result<Report, TestCaseError> {
        let now = Nanos::new(now);
        let gcra = report(self.limiter.check_n_at(cost, now));
        let mutex = report(self.bucket.check_n_at(cost, now));
        prop_assert_eq!(&gcra, &mutex, "check_n_at({}, {:?}) at {}", cost, now, step);
        Ok(gcra)
    }

    fn refund_n(&self, n: u32, now: u64) {
        self.limiter.refund_n_at(n, Nanos::new(now));
        self.bucket.refund_n_at(n, Nanos::new(now));
    }

    /// Compares `available_at(now)` and a peek at `now`, which must agree too.
    fn level(&self, now: u64, step: &str) -> Result<(), TestCaseError> {
        let now_ns = Nanos::new(now);
        let (gcra, mutex) = (
            self.limiter.available_at(now_ns),
            self.bucket.available_at(now_ns),
        );
        prop_assert_eq!(gcra, mutex, "available_at({:?}) at {}", now_ns, step);
        let peek = self.check(0, now, step)?;
        prop_assert_eq!(
            peek.remaining,
            gcra,
            "a peek and available_at disagree at {}",
            step
        );
        Ok(())
    }
}

/// One step of a schedule, in raw numbers that [`run`] scales to the quota.
#[derive(Debug, Clone)]
struct Step {
    /// 0..=5: check, 6..=7: refund, 8..=9: available.
    op: u8,
    /// The cost or refund, reduced to `0..=burst + 2` (a refund of 255 means `u32::MAX`).
    amount: u32,
    /// 0..=3: later by a random gap, 4: later by whole tokens, 5: later by at most one
    /// interval, 6: stale (earlier than the latest time, which stays), 7: exactly at, or 1 ns
    /// before, the instant the last denial said to retry at.
    when: u8,
    /// The gap, stale distance or choice, reduced to the quota's scale.
    raw: u64,
}

fn steps(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<Step>> {
    let step =
        (0..10u8, any::<u32>(), 0..8u8, any::<u64>()).prop_map(|(op, amount, when, raw)| Step {
            op,
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

/// Runs `steps` on both buckets from `start` (full, or empty if `empty`).
fn run(quota: Quota, empty: bool, start: u64, steps: &[Step]) -> Result<(), TestCaseError> {
    let pair = Pair::new(quota, empty.then_some(start));
    let (t, b, d) = (
        quota.emission_interval_ns(),
        quota.burst(),
        quota.depth_ns(),
    );
    let mut latest = start;
    let mut retry_at: Option<u64> = None;
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
        let step = format!("step {i} {s:?} now {now}");
        match s.op {
            0..=5 => {
                let outcome = pair.check(amount, now, &step)?;
                if let Some(wait) = outcome.retry_after {
                    retry_at = Some(now.saturating_add(wait.as_nanos() as u64));
                }
            }
            6..=7 => pair.refund_n(
                if s.amount % 256 == 255 {
                    u32::MAX
                } else {
                    amount
                },
                now,
            ),
            _ => {}
        }
        pair.level(now, &step)?;
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
    fn limiter_and_mutex_bucket_agree_at_every_step(
        quota in quotas(),
        empty in any::<bool>(),
        start in prop_oneof![Just(0u64), 0..=1_000_000_000_000u64],
        steps in steps(100..=300),
    ) {
        run(quota, empty, start, &steps)?;
    }
}

fn step(op: u8, amount: u32, when: u8, raw: u64) -> Step {
    Step {
        op,
        amount,
        when,
        raw,
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
    pair.level(0, "far stale").unwrap();
}

#[test]
fn both_refund_to_exactly_full() {
    let pair = Pair::new(quota(7, 3), Some(100));
    pair.refund_n(2, 103);
    pair.level(103, "partial refund").unwrap();
    pair.refund_n(u32::MAX, 104);
    pair.level(104, "over-refund").unwrap();
    assert_eq!(pair.limiter.available_at(Nanos::new(104)), 3);
}

#[test]
fn both_agree_on_explicit_schedules() {
    let schedules = [
        // Drain, wait out the exact retry instant and 1 ns before it, with a stale check between.
        vec![
            step(0, 3, 0, 0),
            step(0, 1, 7, 0),
            step(0, 1, 7, 1),
            step(0, 1, 6, 5),
            step(0, 1, 7, 0),
        ],
        // Start empty, refill by whole tokens, spend above the burst, refund, check again.
        vec![
            step(0, 2, 4, 2),
            step(0, 6, 5, 3),
            step(6, 1, 5, 0),
            step(0, 3, 6, 1),
            step(8, 0, 0, 9),
        ],
    ];
    for steps in &schedules {
        for empty in [false, true] {
            run(quota(10, 3), empty, 50, steps).unwrap();
            run(Quota::per_second(3), empty, 0, steps).unwrap();
        }
    }
}

/// A refund at a stale time of more than a bucketful. The limiter gives back at most `burst`
/// tokens (`TAT = max(TAT - min(n, b) * T, now)`); the mutex bucket must do the same.
#[test]
fn both_cap_a_stale_refund_at_one_bucketful() {
    let pair = Pair::new(quota(10, 5), None);
    assert!(pair.check(5, 100, "drain").unwrap().ok); // full again at 150
    pair.refund_n(20, 50); // stale: the level at 50 is one bucketful below empty
    for now in [50, 75, 100, 150] {
        pair.level(now, "after a stale over-refund").unwrap();
    }
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
    pair.level(start, "empty near the end").unwrap();
    pair.check(1, start, "a check near the end").unwrap();
}
