//! Give-backs (`Booking::cancel`, `Booking::settle`) against a real `redis-server`: under the
//! quota of the spend, never more than the request still holds, and, on random schedules,
//! equal to a sequential model of the rule and never letting the requests carried out exceed
//! what an exact token bucket admits had the given-back ones never happened.

use crate::redis_support;

use cellrate::{Limiter, ManualClock, Nanos, Quota};
use cellrate_redis::{Booking, RedisLimiter, RedisOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use redis_support::{connected, runtime, RedisServer};
use std::time::Duration;

/// 2025-11-26 in nanoseconds since the Unix epoch.
const START_NS: u64 = 1_764_115_200_000_000_000;

fn at(us: u64) -> Nanos {
    Nanos::new(START_NS + us * 1000)
}

/// Keys written at a caller's time outlive the test's schedules.
fn options() -> RedisOptions {
    redis_support::patient().expiry_margin(Duration::from_secs(600))
}

#[test]
fn redis_a_give_back_uses_the_quota_of_the_spend() {
    let Some((_server, rt, limiter)) = connected(
        "redis_a_give_back_uses_the_quota_of_the_spend",
        Quota::per_hour(10),
        options(),
    ) else {
        return;
    };
    rt.block_on(async {
        let plan = Quota::per_second(10);
        let mut bookings = Vec::new();
        for _ in 0..10 {
            let booking = limiter
                .try_reserve_key_n_with_quota_at("k", 1, &plan, at(0))
                .await
                .unwrap()
                .unwrap();
            bookings.push(booking);
        }
        // One token back, under the plan's 100 ms, not the default's 360 s.
        bookings.pop().unwrap().cancel_at(at(0)).await.unwrap();
        let mut more = 0;
        for _ in 0..12 {
            let answer = limiter.try_check_key_n_with_quota_at("k", 1, &plan, at(0));
            if answer.await.unwrap().is_ok() {
                more += 1;
            }
        }
        assert_eq!(more, 1, "one token was given back");
    });
}

#[test]
fn redis_a_give_back_never_returns_a_later_requests_tokens() {
    let quota = Quota::per_second(1).with_burst(3);
    let Some((_server, rt, limiter)) = connected(
        "redis_a_give_back_never_returns_a_later_requests_tokens",
        quota,
        options(),
    ) else {
        return;
    };
    rt.block_on(async {
        let x = limiter.try_reserve_key_n_at("k", 1, at(0)).await.unwrap();
        let x = x.unwrap();
        // The bucket idles until full, then Y spends the whole burst.
        let y = limiter.try_reserve_key_n_at("k", 3, at(5_000_000)).await;
        assert!(y.unwrap().is_ok());
        x.cancel_at(at(5_000_000)).await.unwrap();
        let z = limiter.try_check_key_n_at("k", 1, at(5_000_000)).await;
        assert!(z.unwrap().is_err(), "X handed back one of Y's tokens");

        // Settling below the cost gives back the unused part; above, charges the extra.
        let w = limiter.try_reserve_key_n_at("w", 3, at(0)).await.unwrap();
        w.unwrap().settle_at(1, at(0)).await.unwrap();
        let peek = limiter.try_check_key_n_at("w", 0, at(0)).await.unwrap();
        assert_eq!(peek.unwrap().remaining(), 2);
        let v = limiter.try_reserve_key_n_at("v", 1, at(0)).await.unwrap();
        v.unwrap().settle_at(3, at(0)).await.unwrap();
        let peek = limiter.try_check_key_n_at("v", 0, at(0)).await.unwrap();
        assert_eq!(peek.unwrap().remaining(), 0);
    });
}

/// One step of a schedule.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// Reserve this many tokens.
    Reserve(u32),
    /// Cancel the booking of this index among those still held (modulo their number).
    Cancel(usize),
    /// Settle that booking at this real cost.
    Settle(usize, u32),
}

fn schedule(burst: u32, interval_us: u64) -> impl Strategy<Value = Vec<(u64, Op)>> {
    let op = prop_oneof![
        5 => (1..=burst + 1).prop_map(Op::Reserve),
        2 => any::<usize>().prop_map(Op::Cancel),
        2 => (any::<usize>(), 0..=burst + 1).prop_map(|(i, n)| Op::Settle(i, n)),
    ];
    let advance = prop_oneof![3 => Just(0u64), 4 => 0..=interval_us * 2, 1 => 0..=interval_us * 8];
    proptest::collection::vec((advance, op), 1..40)
}

/// The rule in whole microseconds: the key's TAT and its credit given back, G.
struct Model {
    interval: u64,
    burst: u32,
    tat: u64,
    g: u64,
}

impl Model {
    /// A spend of `cost` at `now`: the receipt (TAT after, G) if admitted.
    fn reserve(&mut self, cost: u32, now: u64) -> Option<(u64, u64)> {
        let ahead = self.tat.saturating_sub(now);
        let need = ahead + u64::from(cost) * self.interval;
        if cost > self.burst || need > u64::from(self.burst) * self.interval {
            return None;
        }
        self.tat = now + need;
        Some((self.tat, self.g))
    }

    fn give_back(&mut self, k: u32, (after, g0): (u64, u64), now: u64) {
        if self.tat <= now {
            return;
        }
        let position = (after + g0) as i64 - self.g as i64 - now as i64;
        let give = position.clamp(0, (u64::from(k) * self.interval) as i64) as u64;
        let new = self.tat.saturating_sub(give).max(now);
        self.g += self.tat - new;
        self.tat = new;
    }

    fn charge(&mut self, n: u32, now: u64) {
        self.tat = self.tat.max(now) + u64::from(n) * self.interval;
    }

    fn reset_after_us(&self, now: u64) -> u64 {
        self.tat.saturating_sub(now)
    }
}

/// A request the model admitted: when, its cost, its receipt, and what it is carried out at.
struct Held {
    booking: Booking,
    time_us: u64,
    receipt: (u64, u64),
}

#[test]
fn redis_give_backs_follow_the_model_and_never_exceed_the_exact_bucket() {
    let Some(server) = RedisServer::start("redis_give_backs_follow_the_model") else {
        return;
    };
    let rt = runtime();
    let (interval_us, burst) = (1_000u64, 4u32);
    let quota = Quota::try_new(Duration::from_micros(interval_us), burst).unwrap();
    let limiter = rt
        .block_on(RedisLimiter::connect_with(&server.url(), quota, options()))
        .unwrap();
    let mut runner = TestRunner::new(Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    });
    let case = std::sync::atomic::AtomicU64::new(0);
    runner
        .run(&schedule(burst, interval_us), |steps| {
            let run = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let key = format!("gb:{run}");
            let mut model = Model {
                interval: interval_us,
                burst,
                tat: 0,
                g: 0,
            };
            let mut held: Vec<Held> = Vec::new();
            // What was carried out: (time, cost) of each admission that was not given back
            // whole, and (time, extra) of each extra charged.
            let mut carried: Vec<(u64, u32)> = Vec::new();
            let mut forced: Vec<(u64, u32)> = Vec::new();
            let mut now = 0u64;
            for (advance, op) in steps {
                now += advance;
                match op {
                    Op::Reserve(cost) => {
                        let got = rt
                            .block_on(limiter.try_reserve_key_n_at(&key, cost, at(now)))
                            .unwrap();
                        let want = model.reserve(cost, now);
                        prop_assert_eq!(got.is_ok(), want.is_some(), "reserve {} at {}", cost, now);
                        if let (Ok(booking), Some(receipt)) = (got, want) {
                            held.push(Held {
                                booking,
                                time_us: now,
                                receipt,
                            });
                        }
                    }
                    Op::Cancel(i) | Op::Settle(i, _) if held.is_empty() => {
                        let _ = i;
                    }
                    Op::Cancel(i) => {
                        let h = held.remove(i % held.len());
                        let cost = h.booking.cost();
                        rt.block_on(h.booking.cancel_at(at(now))).unwrap();
                        model.give_back(cost, h.receipt, now);
                    }
                    Op::Settle(i, actual) => {
                        let h = held.remove(i % held.len());
                        let cost = h.booking.cost();
                        rt.block_on(h.booking.settle_at(actual, at(now))).unwrap();
                        if actual < cost {
                            model.give_back(cost - actual, h.receipt, now);
                            carried.push((h.time_us, actual));
                        } else {
                            model.charge(actual - cost, now);
                            carried.push((h.time_us, cost));
                            forced.push((now, actual - cost));
                        }
                    }
                }
                let peek = rt
                    .block_on(limiter.try_check_key_n_at(&key, 0, at(now)))
                    .unwrap()
                    .unwrap();
                let reset = peek.reset_after().as_micros() as u64;
                prop_assert_eq!(
                    reset,
                    model.reset_after_us(now),
                    "after {:?} at {}",
                    op,
                    now
                );
            }
            carried.extend(held.iter().map(|h| (h.time_us, h.booking.cost())));
            replay_admits_all(quota, &carried, &forced)
        })
        .unwrap();
}

/// Every carried-out request, at its time and its carried cost, passes an exact bucket that
/// never saw the given-back ones, with each extra charged at its time.
fn replay_admits_all(
    quota: Quota,
    carried: &[(u64, u32)],
    forced: &[(u64, u32)],
) -> Result<(), TestCaseError> {
    // At equal times, spends come before the extras charged then (a settle follows its spend).
    let mut events: Vec<(u64, bool, u32)> = carried.iter().map(|&(t, c)| (t, false, c)).collect();
    events.extend(forced.iter().map(|&(t, c)| (t, true, c)));
    events.sort_by_key(|&(t, extra, _)| (t, extra));
    let exact = Limiter::with_clock(quota, ManualClock::new());
    for (t, extra, cost) in events {
        if extra {
            let booked = exact.at(at(t)).reserve(cost, Duration::MAX);
            booked.expect("an extra within the burst").allowed();
        } else {
            let answer = exact.at(at(t)).check_n(cost);
            prop_assert!(
                answer.is_ok(),
                "{} tokens at {} exceed the exact bucket",
                cost,
                t
            );
        }
    }
    Ok(())
}
