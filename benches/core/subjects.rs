//! The limiters under test, each reduced to "spend one token: was it allowed?", and the quotas
//! that keep every check on one path (always allowed, or always denied).

use crate::mutex_bucket::MutexBucket;
use cellrate::{Limiter, ManualClock, Nanos, Quota};
use governor::clock::{Clock as GovernorClockTrait, FakeRelativeClock};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{DefaultDirectRateLimiter, RateLimiter};
use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The time every `_at` check is made at: one large constant, so that a check costs no clock.
///
/// Staying allowed at a fixed time needs room: each spend pushes the TAT 1 ns further, and the
/// allowing quota's bucket is `u32::MAX` ns (4.29 s) deep, so a fresh limiter admits 4.29e9
/// spends at one instant, far more than one criterion sample makes. Every sample gets a fresh
/// limiter, and the outcomes are counted and asserted after the timed loop.
pub const NOW: Nanos = Nanos::new(1 << 40);

/// Denied-path quotas emit one token a year: after one spend, nothing passes during a run.
pub const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

/// Which branch of the decision every check in a benchmark takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// One token every nanosecond, burst `u32::MAX`: every check is admitted and stores.
    Allowed,
    /// One token a year, burst 1, one token already spent: every check is refused (no store).
    Denied,
}

impl Path {
    /// Panics unless `allowed` of `spends` checks is what this path promises.
    pub fn assert_outcomes(self, allowed: u64, spends: u64) {
        let expected = match self {
            Path::Allowed => spends,
            Path::Denied => 0,
        };
        assert_eq!(
            allowed, expected,
            "{self:?} path: {allowed} of {spends} checks were allowed; the bench left its path"
        );
    }

    pub fn quota(self) -> Quota {
        match self {
            Path::Allowed => Quota::try_new(Duration::from_nanos(1), u32::MAX)
                .expect("1 ns x u32::MAX fits in u64 ns"),
            Path::Denied => Quota::with_period(YEAR),
        }
    }

    pub fn governor_quota(self) -> governor::Quota {
        match self {
            Path::Allowed => governor::Quota::with_period(Duration::from_nanos(1))
                .expect("1 ns is a valid period")
                .allow_burst(NonZeroU32::MAX),
            Path::Denied => governor::Quota::with_period(YEAR).expect("a year is a valid period"),
        }
    }

    /// Puts a fresh subject on this path: the denied path spends its one token first.
    pub fn prime<S: Spend>(self, subject: S) -> S {
        if self == Path::Denied {
            assert!(
                subject.spend(),
                "the first spend of a full bucket must pass"
            );
        }
        subject
    }
}

/// A rate limiter under test: spends one token and says whether it was allowed.
///
/// Every implementation is `#[inline(always)]`: a user's own loop has the limiter's check
/// inlined into it (cellrate's checks are `#[inline(always)]`), and a wrapper that the compiler
/// left out of line would time a call that no user makes, in some subjects and not others.
pub trait Spend: Sync {
    /// Spends one token; `true` if it was allowed.
    fn spend(&self) -> bool;
}

/// Times `iters` spends on this thread and counts how many were allowed.
#[inline]
pub fn time_spends<S: Spend>(subject: &S, iters: u64) -> (Duration, u64) {
    let start = Instant::now();
    let allowed = count_allowed(subject, iters);
    (start.elapsed(), allowed)
}

/// `iters` spends, counting the allowed ones (the count also keeps every result alive).
#[inline]
pub fn count_allowed<S: Spend>(subject: &S, iters: u64) -> u64 {
    let mut allowed = 0u64;
    for _ in 0..iters {
        allowed += u64::from(black_box(subject).spend());
    }
    allowed
}

/// cellrate, time passed in.
pub struct CellrateAt(Limiter<ManualClock>);

/// cellrate on its default [`TickClock`](cellrate::TickClock).
pub struct CellrateClock(Limiter);

/// The mutex token bucket, time passed in.
pub struct MutexAt(MutexBucket<ManualClock>);

/// The mutex token bucket on its default clock.
pub struct MutexClock(MutexBucket);

/// governor 0.10 on its test clock, which stands still unless advanced (a relaxed load to read).
pub struct GovernorFake(RateLimiter<NotKeyed, InMemoryState, FakeRelativeClock, FakeMiddleware>);

/// governor's no-op middleware for its test clock's instant type.
type FakeMiddleware = NoOpMiddleware<<FakeRelativeClock as GovernorClockTrait>::Instant>;

/// governor 0.10 on its default clock (quanta).
pub struct GovernorClock(DefaultDirectRateLimiter);

/// The physical floor of the allowed path: one `compare_exchange_weak` loop adding 1.
pub struct FloorCas(AtomicU64);

/// The physical floor of the denied path: one relaxed load.
pub struct FloorLoad(AtomicU64);

impl CellrateAt {
    pub fn new(path: Path) -> CellrateAt {
        path.prime(CellrateAt(Limiter::with_clock(
            path.quota(),
            ManualClock::new(),
        )))
    }
}

impl CellrateClock {
    pub fn new(path: Path) -> CellrateClock {
        path.prime(CellrateClock(Limiter::new(path.quota())))
    }
}

impl MutexAt {
    pub fn new(path: Path) -> MutexAt {
        path.prime(MutexAt(MutexBucket::with_clock(
            path.quota(),
            ManualClock::new(),
        )))
    }
}

impl MutexClock {
    pub fn new(path: Path) -> MutexClock {
        path.prime(MutexClock(MutexBucket::new(path.quota())))
    }
}

impl GovernorFake {
    pub fn new(path: Path) -> GovernorFake {
        let clock = FakeRelativeClock::default();
        path.prime(GovernorFake(RateLimiter::direct_with_clock(
            path.governor_quota(),
            clock,
        )))
    }
}

impl GovernorClock {
    pub fn new(path: Path) -> GovernorClock {
        path.prime(GovernorClock(RateLimiter::direct(path.governor_quota())))
    }
}

impl FloorCas {
    pub fn new() -> FloorCas {
        FloorCas(AtomicU64::new(0))
    }
}

impl FloorLoad {
    pub fn new() -> FloorLoad {
        FloorLoad(AtomicU64::new(0))
    }
}

impl Spend for CellrateAt {
    #[inline(always)]
    fn spend(&self) -> bool {
        // The time comes from outside, as a batch's one reading does: not a constant the
        // compiler could fold into the check.
        self.0.at(core::hint::black_box(NOW)).check_n(1).is_ok()
    }
}

impl Spend for CellrateClock {
    #[inline(always)]
    fn spend(&self) -> bool {
        self.0.check().is_ok()
    }
}

impl Spend for MutexAt {
    #[inline(always)]
    fn spend(&self) -> bool {
        self.0.check_n_at(1, NOW).is_ok()
    }
}

impl Spend for MutexClock {
    #[inline(always)]
    fn spend(&self) -> bool {
        self.0.check().is_ok()
    }
}

impl Spend for GovernorFake {
    #[inline(always)]
    fn spend(&self) -> bool {
        self.0.check().is_ok()
    }
}

impl Spend for GovernorClock {
    #[inline(always)]
    fn spend(&self) -> bool {
        self.0.check().is_ok()
    }
}

impl Spend for FloorCas {
    #[inline(always)]
    fn spend(&self) -> bool {
        // Relaxed: the counter publishes nothing, as cellrate's TAT publishes nothing.
        let mut current = self.0.load(Ordering::Relaxed);
        loop {
            match self.0.compare_exchange_weak(
                current,
                current + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
    }
}

/// [`FloorCas`] with crossbeam's backoff after a failed CAS, as cellrate's loop has: the floor
/// of a loop that lets one core keep the word while the other waits.
pub struct FloorCasBackoff(AtomicU64);

impl FloorCasBackoff {
    pub fn new() -> FloorCasBackoff {
        FloorCasBackoff(AtomicU64::new(0))
    }
}

impl Spend for FloorCasBackoff {
    #[inline(always)]
    fn spend(&self) -> bool {
        // Relaxed: as in FloorCas.
        let mut current = self.0.load(Ordering::Relaxed);
        let backoff = crossbeam_utils::Backoff::new();
        // Relaxed on both arms: as the load.
        while let Err(actual) =
            self.0
                .compare_exchange_weak(current, current + 1, Ordering::Relaxed, Ordering::Relaxed)
        {
            backoff.spin();
            current = actual;
        }
        true
    }
}

impl Spend for FloorLoad {
    #[inline(always)]
    fn spend(&self) -> bool {
        // Relaxed: as in FloorCas. The value is kept alive so the load is not removed.
        black_box(self.0.load(Ordering::Relaxed));
        false
    }
}

/// The floor of the clock groups: one reading of cellrate's default clock, nothing else.
pub struct FloorClockRead(cellrate::MonotonicClock);

impl FloorClockRead {
    pub fn new() -> FloorClockRead {
        FloorClockRead(cellrate::MonotonicClock::new())
    }
}

impl Spend for FloorClockRead {
    #[inline(always)]
    fn spend(&self) -> bool {
        use cellrate::Clock;
        black_box(self.0.now());
        true
    }
}

/// cellrate on [`QuantaClock`](cellrate::QuantaClock) (feature `quanta`): the TSC clock.
#[cfg(feature = "quanta")]
pub struct CellrateQuanta(Limiter<cellrate::QuantaClock>);

#[cfg(feature = "quanta")]
impl CellrateQuanta {
    pub fn new(path: Path) -> CellrateQuanta {
        let limiter = Limiter::with_clock(path.quota(), cellrate::QuantaClock::new());
        path.prime(CellrateQuanta(limiter))
    }
}

#[cfg(feature = "quanta")]
impl Spend for CellrateQuanta {
    #[inline(always)]
    fn spend(&self) -> bool {
        self.0.check().is_ok()
    }
}

/// One read of [`QuantaClock`](cellrate::QuantaClock).
#[cfg(feature = "quanta")]
pub struct FloorQuantaRead(cellrate::QuantaClock);

#[cfg(feature = "quanta")]
impl FloorQuantaRead {
    pub fn new() -> FloorQuantaRead {
        FloorQuantaRead(cellrate::QuantaClock::new())
    }
}

#[cfg(feature = "quanta")]
impl Spend for FloorQuantaRead {
    #[inline(always)]
    fn spend(&self) -> bool {
        use cellrate::Clock;
        black_box(self.0.now());
        true
    }
}
