//! CachedClock: bad resolutions are refused, readings never run ahead of the monotonic clock,
//! never go backwards, and do move.

use cellrate::{CachedClock, CachedClockError, Clock, Limiter, MonotonicClock, Quota};
use std::time::{Duration, Instant};

#[test]
fn a_resolution_below_the_minimum_is_refused() {
    for too_fine in [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::from_micros(9),
    ] {
        assert_eq!(
            CachedClock::new(too_fine).unwrap_err(),
            CachedClockError::ResolutionTooFine
        );
    }
    let finest = CachedClock::new(CachedClock::MIN_RESOLUTION).expect("the minimum is accepted");
    assert_eq!(finest.resolution(), CachedClock::MIN_RESOLUTION);
    let message = CachedClockError::ResolutionTooFine.to_string();
    assert!(message.contains("10µs"), "{message}");
}

#[test]
fn a_resolution_above_the_maximum_is_refused() {
    for too_coarse in [
        CachedClock::MAX_RESOLUTION + Duration::from_nanos(1),
        Duration::from_secs(3600),
        Duration::MAX,
    ] {
        assert_eq!(
            CachedClock::new(too_coarse).unwrap_err(),
            CachedClockError::ResolutionTooCoarse
        );
    }
    let coarsest = CachedClock::new(CachedClock::MAX_RESOLUTION).expect("the maximum is accepted");
    assert_eq!(coarsest.resolution(), CachedClock::MAX_RESOLUTION);
    let message = CachedClockError::ResolutionTooCoarse.to_string();
    assert!(message.contains("at most 1s"), "{message}");
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
    // The retry time is counted from the cached reading, which is at most a little stale.
    let wait = denied.retry_after().expect("it will pass");
    assert!(
        wait > Duration::from_secs(3590) && wait <= Duration::from_secs(3600),
        "{wait:?}"
    );
    let debug = format!("{clock:?}");
    assert!(
        debug.starts_with("CachedClock") && debug.contains("resolution: 1ms"),
        "{debug}"
    );
}
