//! `Limiter::set_quota_at` against `MutexBucket::set_quota_at`: random schedules of checks,
//! bookings given back and quota changes (every strategy) between them, and the same
//! decision and figures at every step.

use cellrate::baseline::MutexBucket;
use cellrate::{Allowed, Denied, Limiter, ManualClock, Nanos, Quota, QuotaChange};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::time::Duration;

/// An outcome, field by field.
fn report(outcome: Result<Allowed, Denied>) -> (bool, u32, Duration, Option<Duration>) {
    match outcome {
        Ok(a) => (true, a.remaining(), a.reset_after(), None),
        Err(d) => (false, d.remaining(), d.reset_after(), d.retry_after()),
    }
}

const STRATEGIES: [QuotaChange; 6] = [
    QuotaChange::KeepSpent,
    QuotaChange::KeepAvailable,
    QuotaChange::Proportional,
    QuotaChange::KeepTime,
    QuotaChange::Full,
    QuotaChange::Empty,
];

fn quota(interval_ns: u64, burst: u32) -> Quota {
    Quota::try_new(Duration::from_nanos(interval_ns), burst).unwrap()
}

/// A few quotas of very different depths, to move between.
fn quotas() -> impl Strategy<Value = Vec<Quota>> {
    let one = prop_oneof![
        (1..=20u64, 1..=50u32).prop_map(|(t, b)| quota(t, b)),
        (1..=1_000_000u64, 1..=1_000u32).prop_map(|(t, b)| quota(t, b)),
        (1..=10_000u32).prop_map(Quota::per_second),
    ];
    prop::collection::vec(one, 2..=4)
}

/// 0..=4 check, 5 a booking given back, 6 available, 7 a change; the amount, the time step, a choice.
fn steps() -> impl Strategy<Value = Vec<(u8, u32, u64, bool, usize)>> {
    prop::collection::vec(
        (
            0..8u8,
            any::<u32>(),
            any::<u64>(),
            any::<bool>(),
            any::<usize>(),
        ),
        50..=200,
    )
}

fn run(quotas: &[Quota], steps: &[(u8, u32, u64, bool, usize)]) -> Result<(), TestCaseError> {
    let limiter = Limiter::with_clock(quotas[0], ManualClock::new());
    let bucket = MutexBucket::with_clock(quotas[0], ManualClock::new());
    let mut latest = 0u64;
    for (i, &(op, amount, raw, stale, pick)) in steps.iter().enumerate() {
        let q = limiter.quota();
        prop_assert_eq!(q, bucket.quota(), "the quotas at step {}", i);
        let d = q.depth_ns();
        let now = if stale {
            latest.saturating_sub(raw % (d + 1))
        } else {
            latest + raw % (2 * d + 1)
        };
        latest = latest.max(now);
        let at = Nanos::new(now);
        let amount = amount % (q.burst() + 3);
        match op {
            0..=4 => prop_assert_eq!(
                report(limiter.check_n_at(amount, at)),
                report(bucket.check_n_at(amount, at)),
                "check_n_at({}, {}) at step {}",
                amount,
                now,
                i
            ),
            5 => {
                // A booking given back at once: both return to where they were.
                let booked = limiter.reserve_n_at(amount, Duration::ZERO, at);
                let mutex = bucket.reserve_n_at(amount, 0, at);
                prop_assert_eq!(booked.is_ok(), mutex.is_ok(), "booking at step {}", i);
                if let (Ok(booked), Ok(mutex)) = (booked, mutex) {
                    booked.cancel_at(at);
                    bucket.cancel_at(&mutex, at);
                }
            }
            6 => {}
            _ => {
                let (to, how) = (quotas[pick % quotas.len()], STRATEGIES[pick % 6]);
                limiter.set_quota_at(to, how, at);
                bucket.set_quota_at(to, how, at);
            }
        }
        prop_assert_eq!(
            limiter.available_at(at),
            bucket.available_at(at),
            "available_at({}) at step {}",
            now,
            i
        );
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
    fn limiter_and_mutex_bucket_agree_across_quota_changes(
        quotas in quotas(),
        steps in steps(),
    ) {
        run(&quotas, &steps)?;
    }
}

/// A change in the middle of a schedule, written out: the mutex bucket's level maps to the
/// same TAT, and both convert it the same way.
#[test]
fn a_downgrade_in_the_middle_of_a_schedule() {
    let (big, small) = (quota(10, 100), quota(40, 5));
    let limiter = Limiter::with_clock(big, ManualClock::new());
    let bucket = MutexBucket::with_clock(big, ManualClock::new());
    let at = Nanos::new;
    for (cost, now) in [(60, 0), (30, 100)] {
        assert_eq!(
            report(limiter.check_n_at(cost, at(now))),
            report(bucket.check_n_at(cost, at(now)))
        );
    }
    limiter.set_quota_at(small, QuotaChange::KeepSpent, at(150));
    bucket.set_quota_at(small, QuotaChange::KeepSpent, at(150));
    assert_eq!(limiter.available_at(at(150)), 0);
    for (cost, now) in [(1, 150), (1, 190), (5, 350), (2, 360)] {
        assert_eq!(
            report(limiter.check_n_at(cost, at(now))),
            report(bucket.check_n_at(cost, at(now))),
            "{cost} at {now}"
        );
    }
}
