//! Clocks: `ManualClock` (starts at zero, moves only when told, clones share one time, saturates)
//! and `MonotonicClock` (never goes backwards).

use cellrate::{Clock, ManualClock, MonotonicClock, Nanos};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn manual_clock_starts_at_the_origin() {
    assert_eq!(ManualClock::new().now(), Nanos::ZERO);
    assert_eq!(ManualClock::default().now(), Nanos::ZERO);
}

#[test]
fn manual_clock_moves_only_when_told() {
    let clock = ManualClock::new();
    assert_eq!(clock.now(), clock.now());
    clock.advance(Duration::from_millis(250));
    assert_eq!(clock.now(), Nanos::new(250_000_000));
    clock.advance(Duration::from_nanos(1));
    assert_eq!(clock.now(), Nanos::new(250_000_001));
    clock.advance(Duration::ZERO);
    assert_eq!(clock.now(), Nanos::new(250_000_001));
}

#[test]
fn manual_clock_set_moves_forwards_and_backwards() {
    let clock = ManualClock::new();
    clock.set(Nanos::new(1_000));
    assert_eq!(clock.now(), Nanos::new(1_000));
    clock.set(Nanos::new(7));
    assert_eq!(clock.now(), Nanos::new(7));
    clock.advance(Duration::from_nanos(3));
    assert_eq!(clock.now(), Nanos::new(10));
    clock.set(Nanos::ZERO);
    assert_eq!(clock.now(), Nanos::ZERO);
}

#[test]
fn manual_clock_clones_share_one_time() {
    let clock = ManualClock::new();
    let shared = clock.clone();
    clock.advance(Duration::from_secs(2));
    assert_eq!(shared.now(), Nanos::new(2_000_000_000));
    shared.set(Nanos::new(5));
    assert_eq!(clock.now(), Nanos::new(5));
    let third = shared.clone();
    third.advance(Duration::from_nanos(5));
    assert_eq!(clock.now(), Nanos::new(10));
    assert_eq!(shared.now(), Nanos::new(10));
}

#[test]
fn manual_clock_clones_share_time_across_threads() {
    let clock = ManualClock::new();
    std::thread::scope(|s| {
        for _ in 0..4 {
            let clone = clock.clone();
            s.spawn(move || {
                for _ in 0..1_000 {
                    clone.advance(Duration::from_nanos(1));
                }
            });
        }
    });
    assert_eq!(clock.now(), Nanos::new(4_000), "an advance was lost");
}

#[test]
fn manual_clock_advance_saturates_at_max() {
    let clock = ManualClock::new();
    clock.set(Nanos::new(u64::MAX - 5));
    clock.advance(Duration::from_nanos(10));
    assert_eq!(clock.now(), Nanos::MAX);
    clock.advance(Duration::from_nanos(1));
    assert_eq!(clock.now(), Nanos::MAX);

    let clock = ManualClock::new();
    clock.advance(Duration::MAX);
    assert_eq!(clock.now(), Nanos::MAX);
}

#[test]
fn monotonic_clock_never_goes_backwards() {
    let clock = MonotonicClock::new();
    let mut last = clock.now();
    for i in 0..5_000 {
        let now = clock.now();
        assert!(now >= last, "read {i}: {now:?} before {last:?}");
        last = now;
    }
}

#[test]
fn monotonic_clock_moves_forward_over_a_sleep() {
    let clock = MonotonicClock::default();
    let before = clock.now();
    std::thread::sleep(Duration::from_millis(2));
    let after = clock.now();
    assert!(
        after.saturating_duration_since(before) >= Duration::from_millis(2),
        "{before:?} -> {after:?} across a 2 ms sleep"
    );
}

#[test]
fn references_and_arcs_of_clocks_are_clocks() {
    fn read(clock: impl Clock) -> Nanos {
        clock.now()
    }
    let clock = ManualClock::new();
    clock.set(Nanos::new(42));
    assert_eq!(read(&clock), Nanos::new(42));
    let arc = Arc::new(clock.clone());
    assert_eq!(read(arc.clone()), Nanos::new(42));
    let dynamic: Arc<dyn Clock + Send + Sync> = Arc::new(clock.clone());
    clock.set(Nanos::new(43));
    assert_eq!(read(dynamic), Nanos::new(43));
    let by_ref: &dyn Clock = &clock;
    assert_eq!(read(by_ref), Nanos::new(43));
}

#[cfg(feature = "quanta")]
mod quanta_clock {
    use cellrate::{Clock, Limiter, QuantaClock, Quota};
    use std::time::{Duration, Instant};

    #[test]
    fn never_goes_backwards_and_follows_real_time() {
        let clock = QuantaClock::new();
        // The real interval brackets the clock's: a stall between two readings lengthens both.
        let real_start = Instant::now();
        let start = clock.now();
        let mut last = start;
        for _ in 0..5_000 {
            let now = clock.now();
            assert!(now >= last, "{now:?} < {last:?}");
            last = now;
        }
        std::thread::sleep(Duration::from_millis(20));
        let (elapsed, real) = (
            clock.now().saturating_duration_since(start),
            real_start.elapsed(),
        );
        // Generous bounds: the point is the scale (ns, not ticks), not the precision.
        assert!(
            elapsed >= Duration::from_millis(15),
            "{elapsed:?} vs {real:?}"
        );
        assert!(
            elapsed <= real + Duration::from_millis(50),
            "{elapsed:?} vs {real:?}"
        );
    }

    #[test]
    fn clones_and_new_clocks_share_one_origin() {
        let a = QuantaClock::new();
        let b = QuantaClock::new();
        let (first, second) = (a.now(), b.now());
        assert!(second >= first);
        assert!(second.saturating_duration_since(first) < Duration::from_secs(1));
    }

    #[test]
    fn drives_a_limiter() {
        let limiter = Limiter::with_clock(Quota::per_second(1).with_burst(2), QuantaClock::new());
        assert!(limiter.check().is_ok());
        assert!(limiter.check().is_ok());
        assert!(limiter.check().is_err());
    }
}
