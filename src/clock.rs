//! Clocks: where a limiter reads `now`.
//!
//! [`MonotonicClock`] (needs `std`) is the default. [`ManualClock`] is for tests and simulations:
//! time moves only when told to. Every check also has an `_at(now)` form that takes the time
//! from the caller, which is the cheapest clock of all when one reading serves many checks.

use crate::nanos::Nanos;
use crate::sync::{AtomicU64, Ordering};
use alloc::sync::Arc;
use core::time::Duration;

/// A source of [`Nanos`]. Implementations should never go backwards; if one does, the limiter
/// stays safe (a stale reading never grants tokens) but may deny more than it would have.
pub trait Clock {
    /// The current instant on this clock.
    fn now(&self) -> Nanos;
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> Nanos {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Nanos {
        (**self).now()
    }
}

/// The default clock: `std::time::Instant`, measured from one origin shared by the whole
/// process (the first time any `MonotonicClock` is made).
///
/// Monotonic: a wall clock that jumps backwards cannot hand out free tokens. Because every
/// `MonotonicClock` shares one origin, a reading from one limiter's clock is valid for any
/// other limiter on a `MonotonicClock`: read once, then use the `_at(now)` forms for a batch
/// of checks. A read costs a `clock_gettime`, more than a whole uncontended check
/// (BENCHMARKS.md), so that saving is real.
#[cfg(feature = "std")]
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    origin: std::time::Instant,
}

#[cfg(feature = "std")]
impl MonotonicClock {
    /// The process-wide monotonic clock.
    pub fn new() -> MonotonicClock {
        static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        MonotonicClock {
            origin: *ORIGIN.get_or_init(std::time::Instant::now),
        }
    }
}

#[cfg(feature = "std")]
impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock::new()
    }
}

#[cfg(feature = "std")]
impl Clock for MonotonicClock {
    #[inline]
    fn now(&self) -> Nanos {
        // 2^64 ns is 584 years of uptime: saturate rather than wrap if it ever happens.
        let ns = self.origin.elapsed().as_nanos();
        Nanos::new(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

/// A clock that moves only when told to. Clones share one time, so a test can hold a clone and
/// advance the clock of a limiter it handed the other clone to.
///
/// ```
/// use cellrate::{Clock, ManualClock, Nanos};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let shared = clock.clone();
/// clock.advance(Duration::from_millis(250));
/// assert_eq!(shared.now(), Nanos::new(250_000_000));
/// shared.set(Nanos::new(7));
/// assert_eq!(clock.now(), Nanos::new(7));
/// ```
#[derive(Clone, Debug)]
pub struct ManualClock {
    ns: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock at [`Nanos::ZERO`].
    pub fn new() -> ManualClock {
        ManualClock {
            ns: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Moves the clock forward by `by`, stopping at [`Nanos::MAX`].
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        // Relaxed: the time publishes no other memory; coherence keeps each reader monotonic.
        let _ = self
            .ns
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_add(by))
            });
    }

    /// Sets the clock to `to`, forwards or backwards (a backwards step simulates a stale reading).
    pub fn set(&self, to: Nanos) {
        // Relaxed: as in `advance`.
        self.ns.store(to.as_u64(), Ordering::Relaxed);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now(&self) -> Nanos {
        // Relaxed: as in `advance`.
        Nanos::new(self.ns.load(Ordering::Relaxed))
    }
}
