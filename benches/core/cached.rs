//! Subjects on clocks that a background thread refreshes every millisecond, the cheapest
//! clocks to read: cellrate's `CachedClock` and governor's `QuantaUpkeepClock`.

use super::subjects::{Path, Spend};
use cellrate::{CachedClock, Limiter};
use governor::clock::QuantaUpkeepClock;
use governor::state::{InMemoryState, NotKeyed};
use governor::RateLimiter;
use std::sync::OnceLock;
use std::time::Duration;

/// How often both clocks are refreshed.
const RESOLUTION: Duration = Duration::from_millis(1);

/// cellrate on [`CachedClock`].
pub struct CellrateCached(Limiter<CachedClock>);

impl CellrateCached {
    pub fn new(path: Path) -> CellrateCached {
        let clock = CachedClock::new(RESOLUTION).expect("a refresh thread starts");
        path.prime(CellrateCached(Limiter::with_clock(path.quota(), clock)))
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
        static CLOCK: OnceLock<QuantaUpkeepClock> = OnceLock::new();
        let clock = CLOCK.get_or_init(|| {
            QuantaUpkeepClock::from_interval(RESOLUTION).expect("quanta's upkeep thread starts")
        });
        let limiter = RateLimiter::direct_with_clock(path.governor_quota(), clock.clone());
        path.prime(GovernorCached(limiter))
    }
}

impl Spend for GovernorCached {
    #[inline]
    fn spend(&self) -> bool {
        self.0.check().is_ok()
    }
}
