//! CachedClock: bad resolutions are refused, readings never run ahead of the monotonic clock,
//! never go backwards, and do move.

use cellrate::{
    all_of, CachedClock, CachedClockError, Clock, Denied, KeyedLimiter, Limiter, MonotonicClock,
    Quota,
};
use std::time::{Duration, Instant};

#[test]
fn resolutions_outside_the_bounds_are_refused_and_the_bounds_accepted() {
    let cases = [
        (
            [
                Duration::ZERO,
                Duration::from_nanos(1),
                Duration::from_micros(9),
            ],
            CachedClockError::ResolutionTooFine,
            CachedClock::MIN_RESOLUTION,
            "at least 10µs",
        ),
        (
            [
                CachedClock::MAX_RESOLUTION + Duration::from_nanos(1),
                Duration::from_secs(3600),
                Duration::MAX,
            ],
            CachedClockError::ResolutionTooCoarse,
            CachedClock::MAX_RESOLUTION,
            "at most 1s",
        ),
    ];
    for (outside, error, bound, message) in cases {
        for resolution in outside {
            assert_eq!(CachedClock::new(resolution).unwrap_err(), error);
        }
        let clock = CachedClock::new(bound).expect("a bound is accepted");
        assert_eq!(clock.resolution(), bound);
        assert!(error.to_string().contains(message), "{error}");
    }
}

#[test]
fn a_reading_is_never_ahead_of_the_monotonic_clock_and_never_behind_its_creation() {
    let monotonic = MonotonicClock::new();
    let before = monotonic.now();
    let clock = CachedClock::new(Duration::from_micros(50)).expect("a thread starts");
    for _ in 0..10_000 {
        let cached = clock.now();
        assert!(
            cached >= before,
            "{cached:?} is before the clock was made ({before:?})"
        );
        assert!(
            cached <= monotonic.now(),
            "{cached:?} runs ahead of the monotonic clock"
        );
    }
}

#[test]
fn readings_never_go_backwards_and_do_move() {
    let clock = CachedClock::new(Duration::from_micros(100)).expect("a thread starts");
    let clone = clock.clone();
    let first = clock.now();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = first;
    while last == first {
        assert!(Instant::now() < deadline, "the reading never moved");
        let next = clone.now();
        assert!(next >= last, "went back from {last:?} to {next:?}");
        last = next;
    }
}

#[test]
fn a_limiter_on_it_decides_at_the_cached_time() {
    let clock = CachedClock::new(Duration::from_millis(1)).expect("a thread starts");
    let limiter = Limiter::with_clock(Quota::per_hour(1), clock.clone());
    assert!(limiter.check().is_ok());
    let denied = limiter.check().expect_err("one per hour");
    // The retry time is counted from the cached reading, which is at most a little stale, and
    // covers two resolutions of lag: the retry's reading lags too.
    let wait = denied.retry_after().expect("it will pass");
    let most = Duration::from_secs(3600) + 2 * clock.resolution();
    assert!(wait > Duration::from_secs(3590) && wait <= most, "{wait:?}");
    let debug = format!("{clock:?}");
    assert!(
        debug.starts_with("CachedClock") && debug.contains("resolution: 1ms"),
        "{debug}"
    );
}

#[test]
fn every_refusal_on_its_readings_covers_two_resolutions_of_lag() {
    let clock = CachedClock::new(CachedClock::MAX_RESOLUTION).expect("a thread starts");
    let lag = 2 * CachedClock::MAX_RESOLUTION;
    let quota = Quota::per_hour(1);
    let retry = |answer: Result<(), Denied>| answer.unwrap_err().retry_after().unwrap();
    loop {
        let now = clock.now();
        let limiter = Limiter::with_clock(quota, clock.clone());
        let keyed = KeyedLimiter::<u64, _>::builder(quota)
            .max_keys(16)
            .clock(clock.clone())
            .build();
        limiter.check_at(now).unwrap();
        keyed.check_key_n_at(&1, 1, now).unwrap();
        // Each form that reads the clock beside its `_at` twin at the same reading.
        let pairs = [
            (
                "check",
                limiter.check().map(drop),
                limiter.check_at(now).map(drop),
            ),
            (
                "all_of",
                all_of(&[&limiter]).check_n(1).map(drop),
                all_of(&[&limiter]).check_n_at(1, now).map(drop),
            ),
            (
                "reserve_n",
                limiter.reserve_n(1, Duration::ZERO).map(drop),
                limiter.reserve_n_at(1, Duration::ZERO, now).map(drop),
            ),
            (
                "check_key",
                keyed.check_key(&1).map(drop),
                keyed.check_key_n_at(&1, 1, now).map(drop),
            ),
            (
                "key().reserve_n",
                keyed.key(&1).reserve_n(1, Duration::ZERO).map(drop),
                keyed.key(&1).reserve_n_at(1, Duration::ZERO, now).map(drop),
            ),
        ];
        if clock.now() != now {
            continue; // refreshed meanwhile: the pairs did not share a reading
        }
        for (name, read, at) in pairs {
            assert_eq!(retry(read), retry(at) + lag, "{name}");
        }
        break;
    }
}
