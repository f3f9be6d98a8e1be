//! Helpers shared by the integration tests (declared once by `tests/integration.rs`; the test
//! files take it with `use crate::common;`).
#![allow(dead_code)]

pub mod mutex_bucket;

use cellrate::{
    Clock, Denied, KeyedLimiter, Limiter, ManualClock, Nanos, Quota, QuotaChange, Reservation,
};
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A quota of one token every `interval_ns` nanoseconds, holding `burst`.
pub fn quota(interval_ns: u64, burst: u32) -> Quota {
    Quota::try_new(Duration::from_nanos(interval_ns), burst).unwrap()
}

/// Every rule of a quota change.
pub const RULES: [QuotaChange; 6] = [
    QuotaChange::KeepSpent,
    QuotaChange::KeepAvailable,
    QuotaChange::Proportional,
    QuotaChange::KeepTime,
    QuotaChange::Full,
    QuotaChange::Empty,
];

/// `n` milliseconds on a limiter's clock: the tests' one time helper.
pub fn ms(n: u64) -> Nanos {
    Nanos::new(n * 1_000_000)
}

/// `ns` nanoseconds on a limiter's clock.
pub fn at(ns: u64) -> Nanos {
    Nanos::new(ns)
}

/// A full limiter of `quota` on a manual clock at 0, and the clock: the tests' builder.
pub fn manual(quota: Quota) -> (Limiter<ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    (Limiter::with_clock(quota, clock.clone()), clock)
}

/// A keyed limiter of `quota` (default capacity, keys starting full) on a manual clock at 0,
/// and the clock.
pub fn keyed<K: Hash + Eq>(quota: Quota) -> (KeyedLimiter<K, ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    (
        KeyedLimiter::builder(quota).clock(clock.clone()).build(),
        clock,
    )
}

/// Two answers of one booking, made on a limiter's clock reading `now` and at `now` passed in:
/// equal, and each then given back alike by the rule `step % 3` picks (cancel, settle one
/// higher, settle at 0), the second with the time passed in.
pub fn same_booking(
    (on_clock, passed_in): (
        Result<Reservation<'_, ManualClock>, Denied>,
        Result<Reservation<'_, ManualClock>, Denied>,
    ),
    step: usize,
    now: Nanos,
    what: &str,
) {
    match (on_clock, passed_in) {
        (Ok(a), Ok(b)) => {
            assert_eq!(
                (a.ready_at(), a.allowed()),
                (b.ready_at(), b.allowed()),
                "{what}"
            );
            let cost = a.cost();
            match step % 3 {
                0 => (a.cancel(), b.cancel_at(now)),
                1 => (
                    a.settle(cost + 1).unwrap(),
                    b.settle_at(cost + 1, now).unwrap(),
                ),
                _ => (a.settle(0).unwrap(), b.settle_at(0, now).unwrap()),
            };
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "{what}"),
        (a, b) => panic!("{what}: {a:?} on the clock, {b:?} passed in"),
    }
}

/// A clock whose coarse reading (`now_within` a tolerance of at least `step`) lags the true
/// time by a lag the test sets, up to `bound`, and says so in `lag_within`: what a cached
/// clock does, with the lag under the test's control.
#[derive(Clone)]
pub struct LaggingClock {
    /// The true time; `now` and the fine readings.
    pub truth: ManualClock,
    lag_ns: Arc<AtomicU64>,
    step_ns: u64,
    bound_ns: u64,
}

impl LaggingClock {
    pub fn new(step: Duration, bound: Duration) -> LaggingClock {
        LaggingClock {
            truth: ManualClock::new(),
            lag_ns: Arc::new(AtomicU64::new(0)),
            step_ns: step.as_nanos() as u64,
            bound_ns: bound.as_nanos() as u64,
        }
    }

    /// How far the coarse readings lag from now on (at most `bound`).
    pub fn set_lag(&self, lag: Duration) {
        let lag = lag.as_nanos() as u64;
        assert!(
            lag <= self.bound_ns,
            "a lag past the bound the clock declares"
        );
        self.lag_ns.store(lag, Ordering::Relaxed);
    }
}

impl Clock for LaggingClock {
    fn now(&self) -> Nanos {
        self.truth.now()
    }

    fn now_within(&self, tolerance: Nanos) -> Nanos {
        let now = self.truth.now().as_u64();
        if tolerance.as_u64() < self.step_ns {
            return Nanos::new(now);
        }
        Nanos::new(now.saturating_sub(self.lag_ns.load(Ordering::Relaxed)))
    }

    fn lag_within(&self, tolerance: Nanos) -> Nanos {
        if tolerance.as_u64() < self.step_ns {
            return Nanos::ZERO;
        }
        Nanos::new(self.bound_ns)
    }
}

/// The reading a limiter on `clock` decides `quota` on: the cached one where the quota is deep
/// enough for it (`now_within` a sixteenth of its depth, what a limiter asks for). Taken just
/// before an operation, it is no later than the operation's own reading, and `clock.now()`
/// taken just after is no earlier: real-clock tests measure between the two, in the limiter's
/// own time, so that a refresher or a test thread kept off the cores cannot move the figures.
pub fn decision_time<C: Clock>(clock: &C, quota: &Quota) -> Nanos {
    let depth = u64::try_from(quota.replenish_all().as_nanos()).unwrap_or(u64::MAX);
    clock.now_within(Nanos::new(depth / 16))
}

/// Runs `call` and asserts that it returned without sleeping (see [`slept`]).
pub fn returns_at_once<T>(what: &str, call: impl FnOnce() -> T) -> T {
    let (answer, slept) = slept(call);
    assert!(!slept, "{what}: slept");
    answer
}

/// Runs `call`, and tells whether it slept, however long a loaded machine kept this thread off
/// the cores meanwhile. On Linux: by the thread's voluntary context switches
/// (`/proc/thread-self/status`), which every sleep and blocking wait adds to and a preemption
/// does not. Elsewhere: by whether it took half a second, far more than the calls these tests
/// expect at once take and less than the waits they would sleep.
pub fn slept<T>(call: impl FnOnce() -> T) -> (T, bool) {
    let (started, switches) = (std::time::Instant::now(), voluntary_switches());
    let answer = call();
    let slept = match (switches, voluntary_switches()) {
        (Some(before), Some(after)) => after != before,
        _ => started.elapsed() >= Duration::from_millis(500),
    };
    (answer, slept)
}

/// This thread's voluntary context switches so far, where Linux tells.
fn voluntary_switches() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/thread-self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|n| n.trim().parse().ok())
}

/// Runs `attempt` until a run of it is judged, at most 10 times. A real-clock test whose premise
/// a loaded machine can break (a few statements in a row taking longer than a bucket takes to
/// refill, say) checks what it still can in a run whose premise did not hold and returns
/// `false`; a run that judged returns `true`.
pub fn until_judged(what: &str, mut attempt: impl FnMut() -> bool) {
    if !(0..10).any(|_| attempt()) {
        panic!("{what}: the premise failed in each of 10 runs");
    }
}
