//! Helpers shared by the integration tests (declared once by `tests/integration.rs`; the test
//! files take it with `use crate::common;`).
#![allow(dead_code)]

use cellrate::{Clock, ManualClock, Nanos, Quota};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A quota of one token every `interval_ns` nanoseconds, holding `burst`.
pub fn quota(interval_ns: u64, burst: u32) -> Quota {
    Quota::try_new(Duration::from_nanos(interval_ns), burst).unwrap()
}

/// `ns` nanoseconds on a limiter's clock.
pub fn at(ns: u64) -> Nanos {
    Nanos::new(ns)
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
    clock.now_within(Nanos::new(quota.depth_ns() / 16))
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
