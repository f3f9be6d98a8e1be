//! Worked token-bucket examples, replayed to the request.
//!
//! Capacity 6, refilled at 2 tokens per second (one token every 500 ms, full after 3 s); and
//! 100 per second with a burst of 10.

use crate::common::{manual, ms};
use cellrate::{Limiter, ManualClock, Nanos, Quota};
use std::time::Duration;

/// The guide's bucket: capacity 6 at 2 tokens per second.
fn guide_bucket() -> Limiter<ManualClock> {
    manual(Quota::per_second(2).with_burst(6)).0
}

/// Sends `count` requests `gap_ms` apart from 0 and returns which passed, in order.
fn replay(limiter: &Limiter<ManualClock>, count: u64, gap_ms: u64) -> Vec<bool> {
    (0..count)
        .map(|i| limiter.at(ms(i * gap_ms)).check_n(1).is_ok())
        .collect()
}

#[test]
fn a_burst_of_nine_requests_150_ms_apart_passes_the_first_eight() {
    let limiter = guide_bucket();
    let passed = replay(&limiter, 9, 150);
    assert_eq!(
        passed,
        [true, true, true, true, true, true, true, true, false]
    );
    // Request nine arrives to 0.4 tokens at 1.2 s: 0.6 of a token, 300 ms, short.
    let denied = limiter.at(ms(1_200)).check_n(1).unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_millis(300)));
    assert_eq!(denied.remaining(), 0);
}

#[test]
fn one_request_every_600_ms_always_passes_and_the_bucket_stays_full() {
    let (limiter, clock) = manual(Quota::per_second(2).with_burst(6));
    for i in 0..30 {
        let allowed = limiter
            .check()
            .unwrap_or_else(|d| panic!("request {i}: {d}"));
        assert_eq!(allowed.remaining(), 5, "request {i}");
        assert_eq!(
            allowed.reset_after(),
            Duration::from_millis(500),
            "request {i}"
        );
        clock.advance(Duration::from_millis(600));
        assert_eq!(limiter.available(), 6, "after request {i}");
    }
}

#[test]
fn one_request_every_250_ms_passes_eleven_then_alternates_deny_allow() {
    let limiter = guide_bucket();
    let passed = replay(&limiter, 40, 250);
    assert!(passed[..11].iter().all(|&p| p), "{passed:?}");
    for (i, &p) in passed.iter().enumerate().skip(11) {
        // Request 12 (index 11) is the first drop; from there every second one passes.
        assert_eq!(p, i % 2 == 0, "request {}: {passed:?}", i + 1);
    }
    assert_eq!(passed.iter().filter(|&&p| p).count(), 11 + 29 / 2);
}

#[test]
fn half_a_token_short_at_two_per_second_waits_exactly_250_ms() {
    let (limiter, clock) = manual(Quota::per_second(2).with_burst(6));
    limiter.check_n(6).unwrap();
    clock.advance(Duration::from_millis(250));
    let denied = limiter.check().unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_millis(250)));
    clock.advance(Duration::from_millis(250) - Duration::from_nanos(1));
    assert!(limiter.check().is_err());
    clock.advance(Duration::from_nanos(1));
    assert_eq!(limiter.check().unwrap().remaining(), 0);
}

#[test]
fn empty_to_full_takes_exactly_three_seconds() {
    let (limiter, clock) = manual(Quota::per_second(2).with_burst(6));
    assert_eq!(
        limiter.quota().replenish_all(),
        Duration::from_millis(3_000)
    );
    assert_eq!(
        limiter.check_n(6).unwrap().reset_after(),
        Duration::from_millis(3_000)
    );
    assert_eq!(
        limiter.check().unwrap_err().reset_after(),
        Duration::from_millis(3_000)
    );
    assert_eq!(
        limiter.check_n(0).unwrap().reset_after(),
        Duration::from_millis(3_000)
    );
    assert_eq!(
        limiter.at(Nanos::new(ms(3_000).as_u64() - 1)).available(),
        5
    );
    assert_eq!(limiter.at(ms(3_000)).available(), 6);
    clock.advance(Duration::from_millis(3_000));
    assert_eq!(limiter.available(), 6);
    assert_eq!(limiter.check_n(0).unwrap().reset_after(), Duration::ZERO);
}

#[test]
fn a_hundred_per_second_with_burst_ten_passes_ten_of_fifteen_then_waits_10_ms() {
    let (limiter, clock) = manual(Quota::per_second(100).with_burst(10));
    let passed = (0..15).filter(|_| limiter.check().is_ok()).count();
    assert_eq!(passed, 10);
    let wait = limiter.check().unwrap_err().retry_after().unwrap();
    assert_eq!(wait, Duration::from_millis(10));
    clock.advance(wait);
    assert!(limiter.check().is_ok());
    assert!(limiter.check().is_err());
}

/// A float bucket at 2/s with capacity 8 and requests every 0.15 s admits 10 of a
/// burst; the exact bucket admits 11, because request 11 arrives to exactly 1.0 tokens
/// (8 - 10 + 10 * 0.3).
#[test]
fn capacity_eight_at_two_per_second_admits_eleven_of_a_burst_150_ms_apart() {
    let (limiter, _) = manual(Quota::per_second(2).with_burst(8));
    let passed = replay(&limiter, 14, 150);
    let mut expected = [false; 14];
    expected[..11].fill(true);
    assert_eq!(passed, expected);
    // Request 11 (at 1.5 s) took the last whole token: the bucket was at exactly zero after it.
    let peek = limiter.at(ms(1_500)).check_n(0).unwrap();
    assert_eq!(peek.reset_after(), Duration::from_millis(4_000));
    assert_eq!(
        limiter.at(ms(1_650)).check_n(1).unwrap_err().retry_after(),
        Some(Duration::from_millis(350))
    );
}
