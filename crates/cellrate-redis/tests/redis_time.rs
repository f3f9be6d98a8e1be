//! Times passed in by callers: rounding them to whole microseconds never admits what the exact
//! limiter would refuse, and the default expiry margin keeps a key alive for a caller whose
//! clock lags the one that wrote it.

use crate::redis_support;

use cellrate::{Limiter, ManualClock, Nanos, Quota};
use cellrate_redis::{RedisLimiter, RedisOptions};
use redis_support::connected;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const A: u64 = 1_764_115_200_000_000_000;

#[test]
fn redis_off_grid_times_never_admit_what_the_exact_limiter_refuses() {
    // The counterexample: 100/s, burst 1; allowed at A + 999 ns, asked again 9.999501 ms
    // later, when the exact limiter is 499 ns short.
    let quota = Quota::per_second(100).with_burst(1);
    let Some((server, rt, limiter)) = connected(
        "redis_off_grid_times_never_admit",
        quota,
        redis_support::patient(),
    ) else {
        return;
    };
    let exact = Limiter::with_clock(quota, ManualClock::new());
    let (t1, t2) = (Nanos::new(A + 999), Nanos::new(A + 999 + 9_999_501));
    assert!(exact.at(t1).check_n(1).is_ok());
    let refused = exact.at(t2).check_n(1).unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_nanos(499)));
    let first = rt
        .block_on(limiter.try_check_key_n_at("ce", 1, t1))
        .unwrap();
    assert!(first.is_ok());
    let second = rt
        .block_on(limiter.try_check_key_n_at("ce", 1, t2))
        .unwrap();
    let retry = second.expect_err("rounding granted a token").retry_after();
    assert!(retry.unwrap() >= Duration::from_nanos(499), "{retry:?}");

    // Random schedules off the grid: whatever Redis admits, the exact limiter with the same
    // admissions admits too.
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    for schedule in 0..6 {
        let interval_us = 1 + next(3000);
        let burst = 1 + next(5) as u32;
        let quota = Quota::try_new(Duration::from_micros(interval_us), burst).unwrap();
        let limiter = rt
            .block_on(RedisLimiter::connect_with(
                &server.url(),
                quota,
                redis_support::patient(),
            ))
            .unwrap();
        let exact = Limiter::with_clock(quota, ManualClock::new());
        let key = format!("offgrid{schedule}");
        let mut now = A + next(1000);
        let (mut admitted, mut agreed) = (0, 0);
        for _ in 0..150 {
            now += next(interval_us * 2_000);
            let cost = 1 + next(u64::from(burst)) as u32;
            let at = Nanos::new(now);
            let available = exact.at(at).available();
            let got = rt
                .block_on(limiter.try_check_key_n_at(&key, cost, at))
                .unwrap();
            if got.is_ok() {
                assert!(cost <= available, "granted {cost} of {available} at {now}");
                exact.at(at).check_n(cost).unwrap();
                admitted += 1;
            }
            agreed += usize::from(got.is_ok() == (cost <= available));
        }
        assert!(admitted > 10, "a schedule that admits little tests little");
        assert!(
            agreed > 100,
            "rounding should differ rarely: {agreed} of 150"
        );
    }
}

fn wall_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

#[test]
fn redis_the_default_margin_keeps_keys_for_a_lagging_caller() {
    let quota = Quota::per_second(1000).with_burst(7);
    let Some((_server, rt, limiter)) = connected(
        "redis_the_default_margin_keeps_keys",
        quota,
        RedisOptions::default().deadline(Duration::from_secs(2)),
    ) else {
        return;
    };
    let exact = Limiter::with_clock(quota, ManualClock::new());
    // Two callers on the server's machine: one on its clock, one 30 ms behind.
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let started = Instant::now();
    let mut steps = 0;
    // 300 ms, and 60 steps at least however a loaded machine spaces them.
    while started.elapsed() < Duration::from_millis(300) || steps < 60 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let lag = if rng.is_multiple_of(2) { 0 } else { 30_000 };
        let cost = 1 + (rng >> 8) as u32 % 3;
        let at = Nanos::new((wall_us() - lag) * 1000);
        let got = rt
            .block_on(limiter.try_check_key_n_at("lag", cost, at))
            .unwrap();
        let want = exact.at(at).check_n(cost);
        assert_eq!(got, want, "step {steps}: cost {cost}, lag {lag} us");
        steps += 1;
        std::thread::sleep(Duration::from_micros(500));
    }
}

#[test]
fn redis_every_tat_written_is_one_the_scripts_read_back() {
    // The deepest bucket the scripts hold: 2^51 us.
    let quota = Quota::try_new(Duration::from_micros(1 << 31), 1 << 20).unwrap();
    let Some((_server, rt, limiter)) = connected(
        "redis_every_tat_written_is_read_back",
        quota,
        redis_support::patient(),
    ) else {
        return;
    };
    // The latest time accepted, off the grid so that the write rounds it up, spending the whole
    // depth: the largest TAT the scripts write.
    let latest = [1u64 << 52, (1 << 52) - 1]
        .into_iter()
        .map(|us| Nanos::new(us * 1000 + 1))
        .find(|&t| {
            rt.block_on(limiter.try_check_key_n_at("probe", 0, t))
                .is_ok()
        })
        .expect("some time near 2^52 us is accepted");
    let spent = rt.block_on(limiter.try_check_key_n_at("k", 1 << 20, latest));
    assert!(spent.unwrap().is_ok());
    // Read back, by a decision and by a booking's give-back.
    let again = rt.block_on(limiter.try_check_key_n_at("k", 1, latest));
    assert!(again.unwrap().is_err(), "the bucket is empty");
    let booked = rt.block_on(limiter.try_reserve_key_n_at("j", 1 << 20, latest));
    let booking = booked.unwrap().unwrap();
    rt.block_on(booking.cancel_at(latest)).unwrap();
}
