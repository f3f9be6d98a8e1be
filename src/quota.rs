//! `Quota`: how fast tokens arrive (the emission interval) and how many can be saved (the burst).

use crate::sync::{fence, AtomicU64, Ordering};
use core::fmt;
use core::num::NonZeroU32;
use core::time::Duration;

/// The deepest quota: 2^62 ns (about 146 years); see [`Quota::MAX_DEPTH`].
pub(crate) const MAX_DEPTH_NS: u64 = 1 << 62;

const NANOS_PER_SECOND: u64 = 1_000_000_000;
const NANOS_PER_MINUTE: u64 = 60 * NANOS_PER_SECOND;
const NANOS_PER_HOUR: u64 = 60 * NANOS_PER_MINUTE;

/// A rate limit: one token every `emission_interval`, at most `burst` tokens saved.
///
/// The bucket depth, `burst * emission_interval`, is at most [`Quota::MAX_DEPTH`]. Intervals
/// are rounded up, so that the long-run rate never exceeds the one configured: `per_second(3)`
/// emits a token every 333,333,334 ns. The constructors panic on a zero figure or a depth
/// beyond `MAX_DEPTH`; for figures read at run time, the `try_` forms return a [`QuotaError`].
///
/// ```
/// use cellrate::Quota;
/// use std::time::Duration;
///
/// let q = Quota::per_second(100).with_burst(10);
/// assert_eq!(q.burst(), 10);
/// assert_eq!(q.emission_interval(), Duration::from_millis(10));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Quota {
    interval_ns: u64,
    depth_ns: u64,
    burst: u32,
}

/// Why a [`Quota`] could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum QuotaError {
    /// A rate of zero tokens per period.
    ZeroRate,
    /// A burst (capacity) of zero tokens.
    ZeroBurst,
    /// An emission interval or period of zero.
    ZeroPeriod,
    /// An emission interval or period longer than [`Quota::MAX_DEPTH`].
    PeriodTooLong,
    /// A quota split into zero shares.
    ZeroShares,
    /// `burst * emission_interval` is longer than [`Quota::MAX_DEPTH`].
    DepthOverflow {
        /// The emission interval in nanoseconds.
        interval_ns: u64,
        /// The burst that was asked for.
        burst: u32,
    },
}

impl fmt::Display for QuotaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuotaError::ZeroRate => f.write_str("quota rate must be at least 1 token per period"),
            QuotaError::ZeroBurst => f.write_str("quota burst must be at least 1 token"),
            QuotaError::ZeroPeriod => f.write_str("quota period must be at least 1 nanosecond"),
            QuotaError::ZeroShares => f.write_str("a quota must be split into at least 1 share"),
            QuotaError::PeriodTooLong => {
                f.write_str("quota period must be at most 2^62 nanoseconds (about 146 years)")
            }
            QuotaError::DepthOverflow { interval_ns, burst } => write!(
                f,
                "quota depth too long: burst {burst} x emission interval {interval_ns} ns \
                 exceeds 2^62 nanoseconds (about 146 years)"
            ),
        }
    }
}

impl core::error::Error for QuotaError {}

impl Quota {
    /// The longest bucket depth (`burst * emission_interval`) a quota may have: 2^62 ns, about
    /// 146 years, so that every TAT up to 2^63 ns after the clock's origin is representable.
    pub const MAX_DEPTH: Duration = Duration::from_nanos(MAX_DEPTH_NS);

    /// `n` tokens per second, burst `n`. The emission interval is `1e9 / n` ns rounded up,
    /// at least 1 ns: above 10^9 per second the rate is 10^9 and the burst is still `n`.
    ///
    /// ```
    /// use cellrate::Quota;
    /// use std::time::Duration;
    ///
    /// let unlimited = Quota::per_second(u32::MAX);
    /// assert_eq!(unlimited.emission_interval(), Duration::from_nanos(1));
    /// assert_eq!(unlimited.burst(), u32::MAX);
    /// ```
    ///
    /// # Panics
    /// If `n` is zero ([`Quota::try_per`] returns the error instead).
    pub fn per_second(n: u32) -> Quota {
        Quota::per_period_ns(n, NANOS_PER_SECOND)
            .unwrap_or_else(|e| panic!("Quota::per_second({n}): {e}"))
    }

    /// `n` tokens per minute, burst `n`. Panics if `n` is zero.
    pub fn per_minute(n: u32) -> Quota {
        Quota::per_period_ns(n, NANOS_PER_MINUTE)
            .unwrap_or_else(|e| panic!("Quota::per_minute({n}): {e}"))
    }

    /// `n` tokens per hour, burst `n`. Panics if `n` is zero.
    pub fn per_hour(n: u32) -> Quota {
        Quota::per_period_ns(n, NANOS_PER_HOUR)
            .unwrap_or_else(|e| panic!("Quota::per_hour({n}): {e}"))
    }

    /// One token every `period`, burst 1. Panics if `period` is zero or longer than
    /// [`Quota::MAX_DEPTH`] ([`Quota::try_new`] returns the error instead).
    pub fn with_period(period: Duration) -> Quota {
        Quota::try_new(period, 1).unwrap_or_else(|e| panic!("Quota::with_period({period:?}): {e}"))
    }

    /// The same rate with a capacity of `burst` tokens. Panics if `burst` is zero or the depth
    /// is longer than [`Quota::MAX_DEPTH`] ([`Quota::try_with_burst`] returns the error).
    pub fn with_burst(self, burst: u32) -> Quota {
        self.try_with_burst(burst)
            .unwrap_or_else(|e| panic!("Quota::with_burst({burst}): {e}"))
    }

    /// Fallible [`Quota::with_burst`].
    pub fn try_with_burst(self, burst: u32) -> Result<Quota, QuotaError> {
        Quota::from_parts(self.interval_ns, burst)
    }

    /// One server's share of this quota when `n` servers enforce it together without a central
    /// store: the emission interval times `n`, and a burst of `burst / n` rounded down, at
    /// least 1 (so with `burst < n` the servers together can burst `n`). Under skewed load the
    /// global limit is under-used; when that matters, keep the bucket in one place (Redis).
    ///
    /// ```
    /// use cellrate::Quota;
    /// use std::time::Duration;
    ///
    /// let share = Quota::per_second(100).with_burst(20).split(4)?;
    /// assert_eq!(share.emission_interval(), Duration::from_millis(40)); // 25/s
    /// assert_eq!(share.burst(), 5);
    /// # Ok::<(), cellrate::QuotaError>(())
    /// ```
    ///
    /// An error if `n` is zero or the share's interval overflows.
    pub fn split(self, n: u32) -> Result<Quota, QuotaError> {
        let n = NonZeroU32::new(n).ok_or(QuotaError::ZeroShares)?;
        let interval_ns = self
            .interval_ns
            .checked_mul(u64::from(n.get()))
            .ok_or(QuotaError::PeriodTooLong)?;
        Quota::from_parts(interval_ns, (self.burst / n).max(1))
    }

    /// `n` tokens per `period`, burst `n`, fallible, for figures read at run time: the
    /// emission interval is `period / n` rounded up (at least 1 ns).
    ///
    /// ```
    /// use cellrate::{Quota, QuotaError};
    /// use std::time::Duration;
    ///
    /// let ten_per_30s = Quota::try_per(10, Duration::from_secs(30)).unwrap();
    /// assert_eq!(ten_per_30s.emission_interval(), Duration::from_secs(3));
    /// let three_a_second = Quota::try_per(3, Duration::from_secs(1)).unwrap();
    /// assert_eq!(three_a_second.emission_interval(), Duration::from_nanos(333_333_334));
    /// assert_eq!(Quota::try_per(0, Duration::from_secs(1)), Err(QuotaError::ZeroRate));
    /// ```
    pub fn try_per(n: u32, period: Duration) -> Result<Quota, QuotaError> {
        let period_ns = u64::try_from(period.as_nanos()).map_err(|_| QuotaError::PeriodTooLong)?;
        if period_ns == 0 {
            return Err(QuotaError::ZeroPeriod);
        }
        Quota::per_period_ns(n, period_ns)
    }

    /// One token every `emission_interval`, at most `burst` saved: the general constructor.
    ///
    /// ```
    /// use cellrate::{Quota, QuotaError};
    /// use std::time::Duration;
    ///
    /// let q = Quota::try_new(Duration::from_millis(10), 5).unwrap();
    /// assert_eq!(q.replenish_all(), Duration::from_millis(50));
    /// assert_eq!(Quota::try_new(Duration::ZERO, 10), Err(QuotaError::ZeroPeriod));
    /// ```
    pub fn try_new(emission_interval: Duration, burst: u32) -> Result<Quota, QuotaError> {
        let ns =
            u64::try_from(emission_interval.as_nanos()).map_err(|_| QuotaError::PeriodTooLong)?;
        Quota::from_parts(ns, burst)
    }

    fn per_period_ns(n: u32, period_ns: u64) -> Result<Quota, QuotaError> {
        let n = NonZeroU32::new(n).ok_or(QuotaError::ZeroRate)?;
        let interval_ns = period_ns.div_ceil(u64::from(n.get())); // the rate never exceeds n
        Quota::from_parts(interval_ns, n.get())
    }

    fn from_parts(interval_ns: u64, burst: u32) -> Result<Quota, QuotaError> {
        if interval_ns == 0 {
            return Err(QuotaError::ZeroPeriod);
        }
        if interval_ns > MAX_DEPTH_NS {
            return Err(QuotaError::PeriodTooLong);
        }
        if burst == 0 {
            return Err(QuotaError::ZeroBurst);
        }
        let depth_ns = interval_ns
            .checked_mul(u64::from(burst))
            .filter(|&depth| depth <= MAX_DEPTH_NS)
            .ok_or(QuotaError::DepthOverflow { interval_ns, burst })?;
        Ok(Quota {
            interval_ns,
            depth_ns,
            burst,
        })
    }

    /// The capacity: how many tokens a full bucket holds.
    #[inline]
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// The time it takes to earn one token.
    #[inline]
    pub fn emission_interval(&self) -> Duration {
        Duration::from_nanos(self.interval_ns)
    }

    /// The time an empty bucket takes to become full (`burst * emission_interval`).
    #[inline]
    pub fn replenish_all(&self) -> Duration {
        Duration::from_nanos(self.depth_ns)
    }

    #[inline]
    pub(crate) fn emission_interval_ns(&self) -> u64 {
        self.interval_ns
    }

    #[inline]
    pub(crate) fn depth_ns(&self) -> u64 {
        self.depth_ns
    }
}

/// A quota kept in two atomic words, read under the owner's version word (a sequence lock), so
/// that a torn read (a word of each of two quotas) is never used.
#[derive(Debug)]
pub(crate) struct AtomicQuota {
    interval_ns: AtomicU64,
    burst: AtomicU64,
}

impl AtomicQuota {
    pub(crate) fn new(quota: Quota) -> AtomicQuota {
        AtomicQuota {
            interval_ns: AtomicU64::new(quota.interval_ns),
            burst: AtomicU64::new(u64::from(quota.burst)),
        }
    }

    /// The quota, possibly torn: valid only if the owner's version check after it passes.
    #[inline]
    pub(crate) fn load(&self) -> Quota {
        // Relaxed: validated by the owner's sequence lock (its Acquire fence follows).
        let interval_ns = self.interval_ns.load(Ordering::Relaxed);
        // Relaxed: as above. A torn burst is only ever a u32 written here.
        let burst = self.burst.load(Ordering::Relaxed) as u32;
        Quota {
            interval_ns,
            // Wrapping: a torn pair is discarded unread, and must not panic first.
            depth_ns: interval_ns.wrapping_mul(u64::from(burst)),
            burst,
        }
    }

    /// The quota, if `version` holds `expected` (even) before and after the read.
    #[inline]
    pub(crate) fn read_at(&self, version: &AtomicU64, expected: u64) -> Option<Quota> {
        // Acquire: pairs with the Release store of the version in `write_at`, so the quota read
        // next is the one written before it.
        if version.load(Ordering::Acquire) != expected {
            return None;
        }
        let quota = self.load();
        // Acquire: the quota's loads come before the version check that validates them, and
        // before every later load the caller validates with the version again.
        fence(Ordering::Acquire);
        // Relaxed: ordered by the fence above.
        (version.load(Ordering::Relaxed) == expected).then_some(quota)
    }

    /// Writes `quota` under the next version of `version` and returns it. Writers of one
    /// version word are made one at a time (their owner's lock).
    pub(crate) fn write_at(&self, version: &AtomicU64, quota: Quota) -> u64 {
        // Relaxed: only the (one) writer writes the version.
        let next = version.load(Ordering::Relaxed) + 2;
        // Relaxed, then a Release fence: a reader that sees any write below sees the version
        // odd, and reads again.
        version.store(next - 1, Ordering::Relaxed);
        fence(Ordering::Release);
        self.store(quota);
        // Release: publishes the quota to readers that find this version (`read_at`).
        version.store(next, Ordering::Release);
        next
    }

    /// Writes `quota`; the owner has marked the cell as being written.
    pub(crate) fn store(&self, quota: Quota) {
        // Relaxed: published by the owner's Release store of the version that follows.
        self.interval_ns.store(quota.interval_ns, Ordering::Relaxed);
        // Relaxed: as above.
        self.burst.store(u64::from(quota.burst), Ordering::Relaxed);
    }
}

impl fmt::Debug for Quota {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Quota")
            .field("emission_interval_ns", &self.interval_ns)
            .field("burst", &self.burst)
            .finish()
    }
}
