//! Subjects on clocks other than the defaults: the ones a background thread refreshes every
//! millisecond, the cheapest clocks to read (cellrate's `TickClock`, read at its cached time
//! for these quotas, and governor's `QuantaUpkeepClock`), and cellrate on the exact clock
//! (`MonotonicClock`, `Instant`).

use super::subjects::{Path, Spend};
use crate::keyed::subjects::{cached_clock, governor_upkeep_clock};
use cellrate::{Limiter, MonotonicClock, TickClock};
use governor::clock::QuantaUpkeepClock;
use governor::state::{InMemoryState, NotKeyed};
use governor::RateLimiter;

/// cellrate on [`TickClock`], reading its cached time: both quotas of [`Path`] are at least
/// 16 ms deep. A refusal on it also adds the clock's declared lag (two ticks) to its
/// `retry_after`: part of the denied rows' time.
pub struct CellrateCached(Limiter<TickClock>);

impl CellrateCached {
    pub fn new(path: Path) -> CellrateCached {
        path.prime(CellrateCached(Limiter::with_clock(
            path.quota(),
            cached_clock(),
        )))
    }
}

impl Spend for CellrateCached {
    #[inline]
    fn spend(&self) -> bool {
        self.0.check().is_ok()
    }
}

/// governor 0.10 on its upkeep clock. quanta runs one upkeep thread per process, so all of
/// these share one clock.
pub struct GovernorCached(RateLimiter<NotKeyed, InMemoryState, QuantaUpkeepClock>);

impl GovernorCached {
    pub fn new(path: Path) -> GovernorCached {
        let limiter =
            RateLimiter::direct_with_clock(path.governor_quota(), governor_upkeep_clock());
        path.prime(GovernorCached(limiter))
    }
}

impl Spend for GovernorCached {
    #[inline]
    fn spend(&self) -> bool {
        self.0.check().is_ok()
    }
}

/// cellrate on [`MonotonicClock`]: an `Instant` read per check.
pub struct CellrateInstant(Limiter<MonotonicClock>);

impl CellrateInstant {
    pub fn new(path: Path) -> CellrateInstant {
        let limiter = Limiter::with_clock(path.quota(), MonotonicClock::new());
        path.prime(CellrateInstant(limiter))
    }
}

impl Spend for CellrateInstant {
    #[inline]
    fn spend(&self) -> bool {
        self.0.check().is_ok()
    }
}
