//! TickClock, the default clock: quotas shallower than 16 ticks are decided on the exact time,
//! deeper ones on the cached time, which never runs ahead, never goes backwards and moves.

use cellrate::{Clock, KeyedLimiter, Limiter, MonotonicClock, Nanos, Quota, TickClock};
use std::time::{Duration, Instant};

/// A tolerance the cached time satisfies: one tick.
const TICK: Nanos = Nanos::new(1_000_000);

/// 1,000,000 tokens a second, burst 1: 1 µs deep. On a time cached every millisecond it would
/// admit about one check a millisecond.
fn shallow() -> Quota {
    Quota::try_new(Duration::from_micros(1), 1).expect("1 µs x 1 fits")
}

/// Checks with `check` until 200 are admitted (for 2 s at most): how many were admitted, and
/// over how many distinct cached readings of the shared tick. On a time cached every
/// millisecond, a quota of burst 1 admits at most one check per cached reading, so the
/// admissions are compared with the cached readings the loop saw (the limiter's own time, not
/// the loop's length, which a loaded machine stretches: a stall adds one reading, not one
/// admission).
fn admissions_over_readings(check: impl Fn() -> bool) -> (u64, u64) {
    let clock = TickClock::new();
    let started = Instant::now();
    let (mut admitted, mut readings, mut last) = (0u64, 0u64, None);
    while admitted < 200 && started.elapsed() < Duration::from_secs(2) {
        let reading = clock.now_within(TICK);
        if last != Some(reading) {
            (readings, last) = (readings + 1, Some(reading));
        }
        admitted += u64::from(check());
    }
    (admitted, readings)
}

/// Asserts that `check` admits 200 where a cached time could not have admitted them.
fn admitted_beyond_the_cached_time(what: &str, check: impl Fn() -> bool) {
    let (admitted, readings) = admissions_over_readings(check);
    assert!(
        admitted >= 200 && admitted > readings + 1,
        "{what}: {admitted} admitted at 1/µs over {readings} cached readings"
    );
}

#[test]
fn a_shallow_quota_is_decided_on_the_exact_time() {
    // Exact: one admission per microsecond the loop spends; cached: one per reading.
    let limiter = Limiter::new(shallow());
    admitted_beyond_the_cached_time("plain", || limiter.check().is_ok());
    let keyed = KeyedLimiter::<u64>::new(shallow());
    admitted_beyond_the_cached_time("keyed", || keyed.check_key(&1).is_ok());
}

#[test]
fn a_quota_per_call_is_decided_on_the_time_its_limiter_reads() {
    // A limiter reads its clock one way, fixed by the quota it is built with: a 1 s deep one
    // reads the cached time, also for a key's bucket under the 1 µs quota of a call, which
    // then admits one check per cached reading.
    let keyed = KeyedLimiter::<u64>::new(Quota::per_second(1_000));
    let quota = shallow();
    let (admitted, readings) =
        admissions_over_readings(|| keyed.key(&1).with_quota(quota).check_n(1).is_ok());
    // One admission per cached reading; the loop's reading of the tick may lead the
    // limiter's by one.
    assert!(
        (1..=readings + 1).contains(&admitted),
        "{admitted} admitted at 1/µs over {readings} cached readings"
    );
    // And a limiter built shallow reads the exact time, also under a quota of a call deep
    // enough for the cached one (1 µs a token, 16 ms deep): once drained, its bucket admits
    // about one check per microsecond the loop spends, where the cached time would give one per
    // reading.
    let exact = KeyedLimiter::<u64>::new(shallow());
    let deep = Quota::try_new(Duration::from_micros(1), 16_000).expect("1 µs x 16,000 fits");
    assert!(exact.key(&1).with_quota(deep).check_n(16_000).is_ok());
    admitted_beyond_the_cached_time("exact, deep per call", || {
        exact.key(&1).with_quota(deep).check_n(1).is_ok()
    });
}

#[test]
fn a_tolerance_of_a_tick_reads_the_cached_time() {
    let clock = TickClock::new();
    clock.now_within(TICK); // starts the refresher
    let readings: Vec<Nanos> = (0..1_000).map(|_| clock.now_within(TICK)).collect();
    let mut distinct = readings.clone();
    distinct.dedup();
    // 1,000 reads take microseconds; a stall between two of them adds one distinct reading,
    // so 100 would take a hundred stalls in a row, or a hundred ticks of reading.
    assert!(
        distinct.len() < 100,
        "{} distinct readings of 1,000 back to back: not a cached time",
        distinct.len()
    );
    let exact: Vec<Nanos> = (0..1_000)
        .map(|_| clock.now_within(Nanos::new(999_999)))
        .collect();
    let mut distinct = exact.clone();
    distinct.dedup();
    assert!(
        distinct.len() > 100,
        "a tolerance below a tick must read the exact time"
    );
}

#[test]
fn cached_readings_never_run_ahead_never_go_backwards_and_move() {
    let clock = TickClock::new();
    let exact = MonotonicClock::new();
    let first = clock.now_within(TICK);
    assert!(
        first <= exact.now(),
        "a cached reading ahead of the exact time"
    );
    let threads: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(|| {
                let (clock, exact) = (TickClock::new(), MonotonicClock::new());
                let mut last = clock.now_within(TICK);
                let start = Instant::now();
                while start.elapsed() < Duration::from_millis(30) {
                    let now = clock.now_within(TICK);
                    assert!(now >= last, "{now:?} after {last:?}");
                    assert!(
                        now <= exact.now(),
                        "a cached reading ahead of the exact time"
                    );
                    last = now;
                }
            })
        })
        .collect();
    threads
        .into_iter()
        .for_each(|t| t.join().expect("a reader failed"));
    // The refresher may be scheduled late on a loaded machine (it then catches up at two ticks
    // per refresh), so the cached time is given up to two seconds to move 20 ms.
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut later = clock.now_within(TICK);
    while later.saturating_duration_since(first) < Duration::from_millis(20)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
        later = clock.now_within(TICK);
    }
    assert!(
        later.saturating_duration_since(first) >= Duration::from_millis(20),
        "{first:?} -> {later:?}: the cached time did not move in 2 s"
    );
}

#[test]
fn now_is_exact_and_shares_the_monotonic_origin() {
    let (clock, exact) = (TickClock::new(), MonotonicClock::new());
    let before = exact.now();
    let reading = clock.now();
    assert!(before <= reading && reading <= exact.now());
}
