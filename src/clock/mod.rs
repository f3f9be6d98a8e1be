//! Clocks: where a limiter reads `now` (docs/design.md §3).

#[cfg(feature = "quanta")]
pub(crate) mod quanta_clock;
#[cfg(feature = "std")]
pub(crate) mod tick_clock;

use crate::nanos::Nanos;
use crate::outcome::Denied;
use crate::quota::Quota;
use crate::sync::{AtomicU64, Ordering};
use alloc::sync::Arc;
use core::time::Duration;

/// A source of [`Nanos`]. Implementations should never go backwards; if one does, the limiter
/// stays safe (a stale reading never grants tokens) but may deny more than it would have.
pub trait Clock {
    /// The current instant on this clock.
    fn now(&self) -> Nanos;

    /// A reading that may lag the current instant by up to about `tolerance`, for a clock with
    /// a cheaper, coarser reading ([`TickClock`](crate::TickClock)). A limiter asks with a
    /// sixteenth of its quota's depth. The default is [`now`](Self::now).
    #[inline]
    fn now_within(&self, tolerance: Nanos) -> Nanos {
        let _ = tolerance;
        self.now()
    }

    /// How far a [`now_within(tolerance)`](Self::now_within) reading may lag the current
    /// instant while the clock runs as it should. A limiter adds it to the `retry_after` of a
    /// refusal decided on such a reading, since the retry's own reading may lag as well. The
    /// default, zero, is right for clocks whose readings are exact.
    #[inline]
    fn lag_within(&self, tolerance: Nanos) -> Nanos {
        let _ = tolerance;
        Nanos::ZERO
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> Nanos {
        (**self).now()
    }

    #[inline]
    fn now_within(&self, tolerance: Nanos) -> Nanos {
        (**self).now_within(tolerance)
    }
    #[inline]
    fn lag_within(&self, tolerance: Nanos) -> Nanos {
        (**self).lag_within(tolerance)
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Nanos {
        (**self).now()
    }

    #[inline]
    fn now_within(&self, tolerance: Nanos) -> Nanos {
        (**self).now_within(tolerance)
    }
    #[inline]
    fn lag_within(&self, tolerance: Nanos) -> Nanos {
        (**self).lag_within(tolerance)
    }
}

/// How a limiter reads its clock: one way for every operation on its buckets, fixed when the
/// limiter is built, with a tolerance of a sixteenth of its quota's depth (docs/design.md §3,
/// *One reading per limiter*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reading {
    tolerance: Nanos,
}

impl Reading {
    #[inline]
    pub(crate) fn for_quota(quota: &Quota) -> Reading {
        Reading {
            tolerance: Nanos::new(quota.depth_ns() >> 4),
        }
    }

    #[inline]
    pub(crate) fn now<C: Clock + ?Sized>(self, clock: &C) -> Nanos {
        clock.now_within(self.tolerance)
    }

    /// How far a reading taken this way may lag the true time ([`Clock::lag_within`]).
    #[inline]
    pub(crate) fn lag<C: Clock + ?Sized>(self, clock: &C) -> Nanos {
        clock.lag_within(self.tolerance)
    }

    /// A refusal decided on a reading taken this way, with its lag added to `retry_after`: the
    /// retry's own reading may lag as much.
    #[inline]
    pub(crate) fn lagged<C: Clock + ?Sized>(self, clock: &C, denied: Denied) -> Denied {
        denied.later_by(self.lag(clock).as_u64())
    }

    /// A refusal decided at `at` (no lag: the caller's time), or on a reading taken this way.
    #[inline]
    pub(crate) fn lagged_unless<C: Clock + ?Sized>(
        self,
        clock: &C,
        at: Option<Nanos>,
        denied: Denied,
    ) -> Denied {
        match at {
            Some(_) => denied,
            None => self.lagged(clock, denied),
        }
    }
}

/// The exact clock: `std::time::Instant`, from one origin shared by the whole process, so that
/// a reading is valid for every limiter on a `MonotonicClock` or a
/// [`TickClock`](crate::TickClock) (read once, then `limiter.at(now)` for a batch). For
/// decisions to the nanosecond whatever the quota: `Limiter::with_clock(q, MonotonicClock::new())`.
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
