//! `CachedClock`: the time a background thread stores every `resolution`, read with one
//! relaxed load.

use crate::clock::{Clock, MonotonicClock};
use crate::nanos::Nanos;
use crate::sync::counter::{AtomicU64, Ordering};
use core::fmt;
use core::time::Duration;
use std::sync::{Arc, OnceLock, Weak};
use std::thread::{self, Thread};

/// A clock whose reading is a [`MonotonicClock`] time that a background thread refreshes every
/// `resolution`. Reading it is one relaxed load: no system call and no timestamp-counter read.
/// A keyed check over many keys runs markedly faster on it than on `Instant` (BENCHMARKS.md):
/// with a counter read in every check the processor does not overlap one check's cache misses
/// with the next, and with a plain load it does.
///
/// The price is staleness: a reading lags the true time by up to `resolution`, plus however
/// long the refresh thread waits to be scheduled on a busy machine. A stale reading never
/// grants tokens (the bucket is judged at an earlier time, when it had at most as many), so a
/// limiter on this clock is never looser than on [`MonotonicClock`]; it admits in steps of
/// `resolution`, and a refusal adds two resolutions to its `retry_after`
/// ([`lag_within`](Clock::lag_within)), since the retry's reading lags too. Pick a resolution
/// well below the emission interval of the quotas that need precision, or accept bursts of
/// `resolution / T` tokens refilled at once.
///
/// **Beside [`TickClock`](crate::TickClock).** The default clock has one fixed tick (1 ms) for
/// the whole process and reads the exact time for quotas shallower than 16 ticks. A
/// `CachedClock` is for what that cannot do: a resolution of your choosing (100 µs, to cache
/// quotas only a few milliseconds deep; 10 ms, to wake ten times less often), a cached reading
/// for every quota whatever its depth, and a refresh thread of its own, stopped with its last
/// clone. Without such a need, keep the default.
///
/// Readings share [`MonotonicClock`]'s origin, so they can be mixed with its readings (for
/// example in the `_at` forms). Clones share one refresh thread, which is woken and stops as
/// soon as the last clone is dropped.
///
/// **fork.** A child process made by `fork` has no copy of the refresh thread: a `CachedClock`
/// made before the fork stops advancing in the child, whose limiters on it then deny once their
/// tokens run out. Make the child's clocks after the fork, or use the default
/// [`TickClock`](crate::TickClock), whose child restarts its refresher.
///
/// ```
/// use cellrate::{CachedClock, KeyedLimiter, Quota};
/// use std::time::Duration;
///
/// let clock = CachedClock::new(Duration::from_millis(1)).expect("a thread can be started");
/// let limiter = KeyedLimiter::<u64, _>::with_clock(Quota::per_second(100), clock);
/// assert!(limiter.check_key(&7).is_ok());
/// ```
#[derive(Clone)]
pub struct CachedClock {
    shared: Arc<Shared>,
}

/// What the clones and the refresh thread share.
struct Shared {
    /// The latest refreshed reading, in nanoseconds since [`MonotonicClock`]'s origin.
    now: AtomicU64,
    resolution: Duration,
    /// The refresh thread, woken when the last clone drops this.
    refresher: OnceLock<Thread>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(thread) = self.refresher.get() {
            thread.unpark();
        }
    }
}

/// Why a [`CachedClock`] could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CachedClockError {
    /// The resolution is below [`CachedClock::MIN_RESOLUTION`]: the refresh thread would spin.
    ResolutionTooFine,
    /// The resolution is above [`CachedClock::MAX_RESOLUTION`]: limiters would refill in
    /// steps so long that they seem stuck.
    ResolutionTooCoarse,
    /// The operating system would not start the refresh thread.
    SpawnFailed,
}

impl fmt::Display for CachedClockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CachedClockError::ResolutionTooFine => write!(
                f,
                "a CachedClock resolution must be at least {:?}",
                CachedClock::MIN_RESOLUTION
            ),
            CachedClockError::ResolutionTooCoarse => write!(
                f,
                "a CachedClock resolution must be at most {:?}",
                CachedClock::MAX_RESOLUTION
            ),
            CachedClockError::SpawnFailed => {
                write!(f, "could not start the CachedClock refresh thread")
            }
        }
    }
}

impl std::error::Error for CachedClockError {}

impl CachedClock {
    /// The finest resolution accepted: 10 µs. Finer refreshes cost the refresh thread most of a
    /// core and the sleep cannot honour them anyway.
    pub const MIN_RESOLUTION: Duration = Duration::from_micros(10);

    /// The coarsest resolution accepted: 1 s. A limiter on a coarser clock would refill in
    /// steps of minutes or never ([`Duration::MAX`]).
    pub const MAX_RESOLUTION: Duration = Duration::from_secs(1);

    /// A clock refreshed every `resolution` (from [`MIN_RESOLUTION`](Self::MIN_RESOLUTION) to
    /// [`MAX_RESOLUTION`](Self::MAX_RESOLUTION)) by a new background thread (named
    /// `cellrate-cached-clock`).
    pub fn new(resolution: Duration) -> Result<CachedClock, CachedClockError> {
        if resolution < Self::MIN_RESOLUTION {
            return Err(CachedClockError::ResolutionTooFine);
        }
        if resolution > Self::MAX_RESOLUTION {
            return Err(CachedClockError::ResolutionTooCoarse);
        }
        let monotonic = MonotonicClock::new();
        let shared = Arc::new(Shared {
            now: AtomicU64::new(monotonic.now().as_u64()),
            resolution,
            refresher: OnceLock::new(),
        });
        let weak = Arc::downgrade(&shared);
        let handle = thread::Builder::new()
            .name("cellrate-cached-clock".into())
            .spawn(move || refresh(&weak, monotonic, resolution))
            .map_err(|_| CachedClockError::SpawnFailed)?;
        // Set before any clone exists, so the last drop always finds it.
        let _ = shared.refresher.set(handle.thread().clone());
        Ok(CachedClock { shared })
    }

    /// How often the reading is refreshed.
    pub fn resolution(&self) -> Duration {
        self.shared.resolution
    }
}

/// The refresh thread: stores the time every `resolution` until no clock is left. It parks
/// between refreshes, so that the last clone's drop (which unparks it) ends it at once; an
/// early wake-up only refreshes early.
fn refresh(shared: &Weak<Shared>, monotonic: MonotonicClock, resolution: Duration) {
    while let Some(shared) = shared.upgrade() {
        // Relaxed: the reading publishes no other memory. One thread stores increasing values,
        // and coherence keeps every reader's successive loads from going backwards.
        shared
            .now
            .store(monotonic.now().as_u64(), Ordering::Relaxed);
        drop(shared);
        thread::park_timeout(resolution);
    }
}

impl Clock for CachedClock {
    #[inline]
    fn now(&self) -> Nanos {
        // Relaxed: as in the refresh thread's store.
        Nanos::new(self.shared.now.load(Ordering::Relaxed))
    }

    /// Two resolutions: a reading lags by up to one while the thread keeps time, and two let
    /// it run up to one late before a retry made at `retry_after` could be refused.
    #[inline]
    fn lag_within(&self, _tolerance: Nanos) -> Nanos {
        let resolution = u64::try_from(self.shared.resolution.as_nanos()).unwrap_or(u64::MAX);
        Nanos::new(resolution.saturating_mul(2))
    }
}

impl fmt::Debug for CachedClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedClock")
            .field("now", &self.now())
            .field("resolution", &self.shared.resolution)
            .finish()
    }
}
