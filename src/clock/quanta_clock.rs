//! `QuantaClock`: a clock read from the CPU's timestamp counter (feature `quanta`).

use crate::clock::Clock;
use crate::nanos::Nanos;
use std::sync::OnceLock;

/// A monotonic clock read from the CPU's timestamp counter through the quanta crate (the clock
/// governor uses), calibrated against the OS clock, which it falls back to where the counter
/// is not invariant. Cheaper than `std::time::Instant` (BENCHMARKS.md, the clock rows).
///
/// All `QuantaClock`s share one origin, not [`MonotonicClock`](crate::MonotonicClock)'s. The
/// first one made calibrates quanta's clock, which can take up to about 200 ms.
#[derive(Clone, Debug)]
pub struct QuantaClock {
    clock: quanta::Clock,
    origin: u64,
}

impl QuantaClock {
    /// The process-wide TSC clock.
    pub fn new() -> QuantaClock {
        static SHARED: OnceLock<(quanta::Clock, u64)> = OnceLock::new();
        let (clock, origin) = SHARED.get_or_init(|| {
            let clock = quanta::Clock::new();
            let origin = clock.raw();
            (clock, origin)
        });
        QuantaClock {
            clock: clock.clone(),
            origin: *origin,
        }
    }
}

impl Default for QuantaClock {
    fn default() -> Self {
        QuantaClock::new()
    }
}

impl Clock for QuantaClock {
    #[inline]
    fn now(&self) -> Nanos {
        Nanos::new(self.clock.delta_as_nanos(self.origin, self.clock.raw()))
    }
}
