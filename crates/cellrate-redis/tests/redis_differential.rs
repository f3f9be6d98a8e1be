//! The Redis backend against the in-process `Limiter`, on random schedules: for quotas on the
//! microsecond grid and times on it, every decision and every figure must be equal. (Give-backs
//! are checked against their own model in `redis_give_back.rs`.)

use crate::redis_support;

use cellrate::{Limiter, ManualClock, Nanos, Quota};
use cellrate_redis::{RedisLimiter, RedisOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use redis_support::{runtime, RedisServer};
use std::time::Duration;

/// 2025-11-26 in nanoseconds since the Unix epoch: a realistic, microsecond-aligned start.
const EPOCH_START_NS: u64 = 1_764_115_200_000_000_000;

#[derive(Clone, Debug)]
struct Schedule {
    interval_us: u64,
    burst: u32,
    start_empty: bool,
    /// (microseconds to move the clock, possibly backwards; the cost checked)
    steps: Vec<(i64, u32)>,
}

fn schedule() -> impl Strategy<Value = Schedule> {
    (1u64..=3_000, 1u32..=12, any::<bool>()).prop_flat_map(|(interval_us, burst, start_empty)| {
        let op = 0..=burst + 2;
        let step = (
            prop_oneof![
                3 => Just(0i64),
                6 => 0i64..=(interval_us as i64 * 3),
                1 => -(interval_us as i64)..0,
            ],
            op,
        );
        proptest::collection::vec(step, 1..60).prop_map(move |steps| Schedule {
            interval_us,
            burst,
            start_empty,
            steps,
        })
    })
}

/// The in-process model of one key: none until first sight when buckets start empty.
struct Model {
    quota: Quota,
    start_empty: bool,
    bucket: Option<Limiter<ManualClock>>,
}

impl Model {
    /// A bucket as first seen at `now`.
    fn fresh(&self, now: Nanos) -> Limiter<ManualClock> {
        let clock = ManualClock::new();
        clock.set(now);
        Limiter::with_clock(self.quota, clock).start_empty(self.start_empty)
    }

    /// The bucket, first seen at `now` if it was not yet.
    fn bucket(&mut self, now: Nanos) -> &Limiter<ManualClock> {
        if self.bucket.is_none() {
            self.bucket = Some(self.fresh(now));
        }
        self.bucket.as_ref().unwrap()
    }
}

#[test]
fn redis_decisions_equal_the_in_process_limiter() {
    let Some(server) = RedisServer::start("redis_decisions_equal_the_in_process_limiter") else {
        return;
    };
    let rt = runtime();
    let mut runner = TestRunner::new(Config {
        cases: 256,
        failure_persistence: None,
        ..Config::default()
    });
    let case = std::sync::atomic::AtomicU64::new(0);
    runner
        .run(&schedule(), |s| {
            // Shrinking re-runs cases: each run gets a key of its own.
            let run = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let key = format!("diff:{run}");
            let quota = Quota::try_new(Duration::from_micros(s.interval_us), s.burst).unwrap();
            let mut options = RedisOptions::default()
                .expiry_margin(Duration::from_secs(600))
                .deadline(Duration::from_secs(5));
            if s.start_empty {
                options = options
                    .start_empty(true)
                    .forget_after(Duration::from_secs(600));
            }
            let limiter = rt
                .block_on(RedisLimiter::connect_with(&server.url(), quota, options))
                .expect("connect");
            prop_assert_eq!(limiter.quota(), quota);
            let mut model = Model {
                quota,
                start_empty: s.start_empty,
                bucket: None,
            };
            let mut now_us = EPOCH_START_NS / 1000;
            for (i, &(advance, cost)) in s.steps.iter().enumerate() {
                now_us = now_us.saturating_add_signed(advance);
                let now = Nanos::new(now_us * 1000);
                let got = rt
                    .block_on(limiter.try_check_key_n_at(&key, cost, now))
                    .expect("redis answers");
                // A peek does not fix a start-empty bucket's first sight.
                let want = if cost == 0 && model.bucket.is_none() {
                    model.fresh(now).at(now).check_n(0)
                } else {
                    model.bucket(now).at(now).check_n(cost)
                };
                prop_assert_eq!(got, want, "step {} at {}: check {}", i, now_us, cost);
            }
            Ok(())
        })
        .unwrap();
}

/// One step of an all-or-nothing schedule: which buckets (indices into the three), the cost.
#[derive(Clone, Debug)]
struct AllOfStep {
    advance_us: u64,
    buckets: Vec<usize>,
    cost: u32,
}

fn all_of_steps() -> impl Strategy<Value = Vec<AllOfStep>> {
    let step = (
        prop_oneof![2 => Just(0u64), 3 => 0u64..=4_000],
        proptest::collection::vec(0usize..3, 1..=3),
        0u32..=7,
    )
        .prop_map(|(advance_us, buckets, cost)| AllOfStep {
            advance_us,
            buckets,
            cost,
        });
    proptest::collection::vec(step, 1..50)
}

#[test]
fn redis_check_all_equals_all_of_in_process() {
    let Some(server) = RedisServer::start("redis_check_all_equals_all_of_in_process") else {
        return;
    };
    let rt = runtime();
    let quotas = [
        Quota::try_new(Duration::from_micros(700), 3).unwrap(), // a user
        Quota::try_new(Duration::from_micros(1_100), 5).unwrap(), // another user
        Quota::try_new(Duration::from_micros(300), 6).unwrap(), // the whole org
    ];
    let options = RedisOptions::default()
        .expiry_margin(Duration::from_secs(600))
        .deadline(Duration::from_secs(5));
    let limiter = rt
        .block_on(RedisLimiter::connect_with(
            &server.url(),
            quotas[0],
            options,
        ))
        .expect("connect");
    let mut runner = TestRunner::new(Config {
        cases: 128,
        failure_persistence: None,
        ..Config::default()
    });
    let case = std::sync::atomic::AtomicU64::new(0);
    runner
        .run(&all_of_steps(), |steps| {
            let run = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let keys: Vec<String> = (0..3).map(|i| format!("{{all{run}}}:{i}")).collect();
            let model: Vec<Limiter<ManualClock>> = quotas
                .iter()
                .map(|&q| Limiter::with_clock(q, ManualClock::new()))
                .collect();
            let mut now_us = EPOCH_START_NS / 1000;
            for (i, step) in steps.iter().enumerate() {
                now_us += step.advance_us;
                let now = Nanos::new(now_us * 1000);
                let limits: Vec<(&str, Quota)> = step
                    .buckets
                    .iter()
                    .map(|&b| (keys[b].as_str(), quotas[b]))
                    .collect();
                let got = rt
                    .block_on(limiter.try_check_all_of_n_at(&limits, step.cost, now))
                    .expect("redis answers");
                let set: Vec<(&dyn cellrate::Limit, u32)> = step
                    .buckets
                    .iter()
                    .map(|&b| (&model[b] as _, step.cost))
                    .collect();
                let want = cellrate::all_of(&set).at(now).check();
                prop_assert_eq!(got, want, "step {}: {:?}", i, step);
            }
            Ok(())
        })
        .unwrap();
}
