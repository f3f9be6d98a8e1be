//! Subjects whose every outcome is read as a user who writes headers reads it, beside the
//! verdict-only subjects of `subjects.rs`: with `is_ok()` alone the compiler drops whatever
//! the verdict does not need (for cellrate, the division behind `remaining()`).
//!
//! cellrate's outcome: `remaining()` and `reset_after()` (and `retry_after()` on a refusal).
//! governor's: its `StateInformationMiddleware` snapshot and `remaining_burst_capacity()`
//! (what tower_governor's headers read), the same quota on both sides.

use super::subjects::{Path, Spend, NOW};
use cellrate::{Allowed, Denied, Limiter, ManualClock};
use governor::clock::{DefaultClock, FakeRelativeClock, Reference};
use governor::middleware::{StateInformationMiddleware, StateSnapshot};
use governor::state::{InMemoryState, NotKeyed};
use governor::{NotUntil, RateLimiter};
use std::hint::black_box;

/// Reads a cellrate outcome whole; `true` if allowed.
#[inline(always)]
pub fn read(outcome: Result<Allowed, Denied>) -> bool {
    match outcome {
        Ok(allowed) => {
            black_box(allowed.remaining());
            black_box(allowed.reset_after());
            true
        }
        Err(denied) => {
            black_box(denied.remaining());
            black_box(denied.reset_after());
            black_box(denied.retry_after());
            false
        }
    }
}

/// Reads a governor outcome with its state snapshot; `true` if allowed.
#[inline(always)]
pub fn read_governor<P: Reference>(outcome: Result<StateSnapshot, NotUntil<P>>) -> bool {
    match outcome {
        Ok(snapshot) => {
            black_box(snapshot.remaining_burst_capacity());
            true
        }
        Err(not_until) => {
            black_box(not_until.earliest_possible());
            false
        }
    }
}

/// cellrate on its default clock, outcome read.
pub struct CellrateRead(Limiter);

impl CellrateRead {
    pub fn new(path: Path) -> CellrateRead {
        path.prime(CellrateRead(Limiter::new(path.quota())))
    }
}

impl Spend for CellrateRead {
    #[inline(always)]
    fn spend(&self) -> bool {
        read(self.0.check())
    }
}

/// cellrate with the time passed in, outcome read.
pub struct CellrateAtRead(Limiter<ManualClock>);

impl CellrateAtRead {
    pub fn new(path: Path) -> CellrateAtRead {
        let limiter = Limiter::with_clock(path.quota(), ManualClock::new());
        path.prime(CellrateAtRead(limiter))
    }
}

impl Spend for CellrateAtRead {
    #[inline(always)]
    fn spend(&self) -> bool {
        read(self.0.at(core::hint::black_box(NOW)).check_n(1))
    }
}

/// governor 0.10 on its default clock (quanta) with its snapshot middleware, outcome read.
pub struct GovernorRead(
    RateLimiter<NotKeyed, InMemoryState, DefaultClock, StateInformationMiddleware>,
);

impl GovernorRead {
    pub fn new(path: Path) -> GovernorRead {
        let limiter = RateLimiter::direct(path.governor_quota()).with_middleware();
        path.prime(GovernorRead(limiter))
    }
}

impl Spend for GovernorRead {
    #[inline(always)]
    fn spend(&self) -> bool {
        read_governor(self.0.check())
    }
}

/// governor 0.10 on its standing-still test clock with its snapshot middleware, outcome read.
pub struct GovernorFakeRead(
    RateLimiter<NotKeyed, InMemoryState, FakeRelativeClock, StateInformationMiddleware>,
);

impl GovernorFakeRead {
    pub fn new(path: Path) -> GovernorFakeRead {
        let clock = FakeRelativeClock::default();
        let limiter =
            RateLimiter::direct_with_clock(path.governor_quota(), clock).with_middleware();
        path.prime(GovernorFakeRead(limiter))
    }
}

impl Spend for GovernorFakeRead {
    #[inline(always)]
    fn spend(&self) -> bool {
        read_governor(self.0.check())
    }
}
