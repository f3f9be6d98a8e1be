//! `TickClock`: the default clock; its refresher protocol is docs/design.md §3.

use crate::clock::{Clock, MonotonicClock};
use crate::nanos::Nanos;
use crate::sync::{AtomicU64, Ordering};
use core::fmt;
use core::time::Duration;
use crossbeam_utils::CachePadded;
use std::thread;

/// The default clock of [`Limiter::new`](crate::Limiter::new) and
/// [`KeyedLimiter::new`](crate::KeyedLimiter::new): exact where a quota needs it, a cached
/// time where a quota cannot tell the difference.
///
/// - **Precision.** Every operation on a bucket whose quota is at least 16
///   [`TICK`](Self::TICK)s deep (`burst * emission_interval` of 16 ms or more) reads a
///   process-wide time that one background thread refreshes every tick (1 ms): one relaxed
///   load. Its decisions move in steps of a tick, and hold back at most a sixteenth of a full
///   bucket. Under a shallower quota every operation reads [`MonotonicClock`], exact to the
///   nanosecond. [`now`](Clock::now) itself is always exact.
/// - **Retries.** A refusal on the cached reading adds two ticks to its `retry_after`
///   ([`lag_within`](Clock::lag_within)): a retry made `retry_after` later passes unless the
///   refresher runs more than a tick late. A late refresher never makes the cached time jump:
///   it catches up at twice real speed.
/// - **Monotonic, one origin.** Readings never go backwards, and cached and exact readings
///   share [`MonotonicClock`]'s origin, so they mix in `limiter.at(now)`.
/// - **The thread** starts at the first cached read, wakes once a millisecond while any
///   `TickClock` exists, stops within a tick after the last one is dropped, and is restarted
///   in a child process after `fork`.
///
/// For the nanosecond on every quota: `Limiter::with_clock(quota, MonotonicClock::new())`.
/// How the refresher is started, stopped and read: docs/design.md §3.
///
/// ```
/// use cellrate::{Clock, Limiter, MonotonicClock, Quota, TickClock};
///
/// let coarse_enough = Limiter::new(Quota::per_second(1_000).with_burst(100)); // 100 ms deep
/// assert!(coarse_enough.check().is_ok());
/// let exact = Limiter::with_clock(Quota::per_second(1_000), MonotonicClock::new());
/// assert!(exact.check().is_ok());
/// // One origin: a TickClock reading is valid for a limiter on MonotonicClock.
/// assert!(exact.at(TickClock::new().now()).check().is_ok());
/// ```
pub struct TickClock {
    exact: MonotonicClock,
}

impl TickClock {
    /// How often the cached time is refreshed: 1 ms.
    pub const TICK: Duration = Duration::from_millis(1);

    /// The process-wide tick clock. Cheap: the thread starts at the first cached read.
    pub fn new() -> TickClock {
        ticker().add_handle();
        TickClock {
            exact: MonotonicClock::new(),
        }
    }
}

impl Default for TickClock {
    fn default() -> Self {
        TickClock::new()
    }
}

impl Clone for TickClock {
    fn clone(&self) -> Self {
        TickClock::new()
    }
}

impl Drop for TickClock {
    fn drop(&mut self) {
        ticker().drop_handle();
    }
}

impl Clock for TickClock {
    /// The exact time ([`MonotonicClock`]).
    #[inline]
    fn now(&self) -> Nanos {
        self.exact.now()
    }

    /// The cached time if `tolerance` is at least a tick, else the exact time.
    #[inline]
    fn now_within(&self, tolerance: Nanos) -> Nanos {
        if tolerance.as_u64() < TICK_NS {
            return self.exact.now();
        }
        // Relaxed: the time publishes no other memory; the refresher only raises it, and
        // coherence keeps each reader's successive loads from going backwards.
        match ticker().now.load(Ordering::Relaxed) {
            0 => ticker().read_cold(|| self.exact.now().as_u64(), start_refresher),
            t => Nanos::new(t),
        }
    }

    /// Two ticks if `tolerance` reads the cached time, else zero: a cached reading lags by up
    /// to a tick while the refresher keeps time, and two let it run up to a tick late before
    /// a retry made at `retry_after` could be refused.
    #[inline]
    fn lag_within(&self, tolerance: Nanos) -> Nanos {
        if tolerance.as_u64() < TICK_NS {
            return Nanos::ZERO;
        }
        Nanos::new(2 * TICK_NS)
    }
}

impl fmt::Debug for TickClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TickClock")
            .field("tick", &Self::TICK)
            .finish_non_exhaustive()
    }
}

const TICK_NS: u64 = 1_000_000;

/// The most one refresh advances the cached time: two ticks (docs/design.md §3).
const CATCH_UP_NS: u64 = 2 * TICK_NS;

#[cfg(all(test, loom))]
mod loom_tests;

/// What every `TickClock` and the refresher share.
struct Ticker {
    /// The latest refreshed reading, in ns since [`MonotonicClock`]'s origin; 0 while no
    /// refresher runs (no reading is 0: the refresher stores at least 1).
    now: CachePadded<AtomicU64>,
    /// 1 while a refresher runs or is being started, else 0.
    running: AtomicU64,
    /// Live `TickClock`s: the refresher stops when there are none.
    handles: AtomicU64,
}

impl Ticker {
    #[cfg(not(loom))]
    const fn new() -> Ticker {
        Ticker {
            now: CachePadded::new(AtomicU64::new(0)),
            running: AtomicU64::new(0),
            handles: AtomicU64::new(0),
        }
    }

    /// Loom's atomics are not made in a constant.
    #[cfg(loom)]
    fn new() -> Ticker {
        Ticker {
            now: CachePadded::new(AtomicU64::new(0)),
            running: AtomicU64::new(0),
            handles: AtomicU64::new(0),
        }
    }

    /// A read that found no cached time: the *Cold read* of docs/design.md §3 (`start` starts
    /// the refresher; if it fails, the reading is `exact`'s).
    #[cold]
    #[inline(never)]
    fn read_cold(&self, exact: impl Fn() -> u64, start: impl FnOnce() -> bool) -> Nanos {
        let mut start = Some(start);
        loop {
            // SeqCst, here and in the stop path of `tick`: the clear of `now` follows the clear
            // of `running` in one total order, so a reader that saw `now == 0` from a stopping
            // refresher also sees `running == 0` and starts the next one.
            let t = self.now.load(Ordering::SeqCst);
            if t != 0 {
                return Nanos::new(t);
            }
            if let Some(start) = start.take_if(|_| self.claim_start()) {
                if !start() {
                    // SeqCst: as above.
                    self.running.store(0, Ordering::SeqCst);
                    return Nanos::new(exact());
                }
            }
            crate::sync::yield_now();
        }
    }

    /// Whether this caller flips `running` from 0 to 1, and so must start the refresher.
    fn claim_start(&self) -> bool {
        // SeqCst: as in `read_cold`.
        self.running
            .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// One step of the refresher: stores `now`, at most two ticks past the time stored before,
    /// and returns true; or, if no `TickClock` is left, clears the time and returns false.
    fn tick(&self, now: u64) -> bool {
        // SeqCst: a handle made before this load keeps the refresher going; one made after it
        // may meet a stopped refresher, which clears `running` before `now` (see `read_cold`),
        // so that handle's next read finds `now == 0` and starts another.
        if self.handles.load(Ordering::SeqCst) == 0 {
            self.running.store(0, Ordering::SeqCst);
            self.now.store(0, Ordering::SeqCst);
            return false;
        }
        // Relaxed: the reading publishes no other memory; fetch_max keeps the time from going
        // backwards whatever the order of stores. The refresher is the only writer while it
        // runs, so the load and the fetch_max see the same time.
        let before = self.now.load(Ordering::Relaxed);
        let next = match before {
            0 => now,
            before => now.min(before.saturating_add(CATCH_UP_NS)),
        };
        self.now.fetch_max(next.max(1), Ordering::Relaxed);
        true
    }

    /// In a child process after `fork`, where no refresher runs: its next cached read starts one.
    #[cfg(all(unix, not(loom)))]
    fn forget_refresher(&self) {
        // SeqCst: as in `tick`'s stop path.
        self.running.store(0, Ordering::SeqCst);
        self.now.store(0, Ordering::SeqCst);
    }

    /// Adds a handle (what [`TickClock::new`] does).
    fn add_handle(&self) {
        // SeqCst: the refresher's stop decision is ordered against it (see `tick`).
        self.handles.fetch_add(1, Ordering::SeqCst);
    }

    /// Drops a handle (what dropping a [`TickClock`] does).
    fn drop_handle(&self) {
        // SeqCst: as in `add_handle`.
        self.handles.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(not(loom))]
fn ticker() -> &'static Ticker {
    static TICKER: Ticker = Ticker::new();
    &TICKER
}

/// Under loom the models drive their own [`Ticker`]s; this one is never refreshed.
#[cfg(loom)]
fn ticker() -> &'static Ticker {
    loom::lazy_static! {
        static ref TICKER: Ticker = Ticker::new();
    }
    &TICKER
}

/// Starts the refresher thread; false if the operating system would not, or if a child
/// process could not be told to forget it (a child's time would then freeze).
fn start_refresher() -> bool {
    #[cfg(all(unix, not(loom)))]
    if !fork::child_handler_registered() {
        return false;
    }
    thread::Builder::new()
        .name("cellrate-tick".into())
        .spawn(|| {
            let exact = MonotonicClock::new();
            while ticker().tick(exact.now().as_u64()) {
                thread::sleep(TickClock::TICK);
            }
        })
        .is_ok()
}

/// The `fork` handler: the child clears the cached time, since the refresher is not copied.
#[cfg(all(unix, not(loom)))]
mod fork {
    use std::sync::OnceLock;

    /// Registers [`child`] once per process (a child inherits the registration); whether that
    /// succeeded.
    pub(super) fn child_handler_registered() -> bool {
        static REGISTERED: OnceLock<bool> = OnceLock::new();
        *REGISTERED.get_or_init(|| {
            // SAFETY:
            // - `child` is an `extern "C" fn()` with no arguments, as pthread_atfork expects.
            // - It only stores to two atomics, which is async-signal-safe, as a child handler
            //   of a multi-threaded parent must be.
            unsafe { libc::pthread_atfork(None, None, Some(child)) == 0 }
        })
    }

    extern "C" fn child() {
        super::ticker().forget_refresher();
    }
}
