//! `Quota`: how fast tokens arrive (the emission interval) and how many can be saved (the burst).

use core::fmt;
use core::num::NonZeroU32;
use core::time::Duration;

const NANOS_PER_SECOND: u64 = 1_000_000_000;
const NANOS_PER_MINUTE: u64 = 60 * NANOS_PER_SECOND;
const NANOS_PER_HOUR: u64 = 60 * NANOS_PER_MINUTE;

/// A rate limit: one token every `emission_interval`, at most `burst` tokens saved.
///
/// The bucket depth, `burst * emission_interval`, is at most [`Quota::MAX_DEPTH`] (2^62 ns,
/// about 146 years); deeper quotas are rejected. That keeps every TAT representable: a full
/// bucket admits any cost up to its burst at any time before 2^63 ns (292 years) after the
/// clock's origin. Rates that do not divide a second are rounded so that the long-run rate
/// never exceeds the one configured: `per_second(3)` emits a token every 333,333,334 ns. The
/// fastest rate is one token per nanosecond: `per_second(n)` for `n` above 10^9 is rejected
/// ([`QuotaError::RateTooHigh`]) rather than silently slowed.
///
/// ```
/// use cellrate::Quota;
/// use std::time::Duration;
///
/// let q = Quota::per_second(100).with_burst(10);
/// assert_eq!(q.burst(), 10);
/// assert_eq!(q.emission_interval(), Duration::from_millis(10));
///
/// // Runtime configuration: the fallible forms return a QuotaError instead of panicking.
/// assert!(Quota::try_per_second(0).is_err());
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
    /// More tokens per period than nanoseconds in it: the emission interval would be below
    /// one nanosecond.
    RateTooHigh {
        /// The tokens per period that were asked for.
        n: u32,
        /// The period in nanoseconds.
        period_ns: u64,
    },
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
            QuotaError::RateTooHigh { n, period_ns } => write!(
                f,
                "quota rate {n} per {period_ns} ns is above one token per nanosecond"
            ),
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
    /// 146 years (type docs).
    pub const MAX_DEPTH: Duration = Duration::from_nanos(crate::gcra::MAX_AHEAD);

    /// `n` tokens per second, burst `n`.
    ///
    /// # Panics
    /// If `n` is zero or above 10^9 (one token per nanosecond, the fastest rate).
    /// [`Quota::try_per_second`] returns the error instead.
    pub fn per_second(n: u32) -> Quota {
        Quota::try_per_second(n).unwrap_or_else(|e| panic!("Quota::per_second({n}): {e}"))
    }

    /// `n` tokens per minute, burst `n`.
    ///
    /// # Panics
    /// If `n` is zero. [`Quota::try_per_minute`] returns the error instead.
    pub fn per_minute(n: u32) -> Quota {
        Quota::try_per_minute(n).unwrap_or_else(|e| panic!("Quota::per_minute({n}): {e}"))
    }

    /// `n` tokens per hour, burst `n`.
    ///
    /// # Panics
    /// If `n` is zero. [`Quota::try_per_hour`] returns the error instead.
    pub fn per_hour(n: u32) -> Quota {
        Quota::try_per_hour(n).unwrap_or_else(|e| panic!("Quota::per_hour({n}): {e}"))
    }

    /// One token every `period`, burst 1.
    ///
    /// # Panics
    /// If `period` is zero or longer than [`Quota::MAX_DEPTH`]. [`Quota::try_with_period`]
    /// returns the error instead.
    pub fn with_period(period: Duration) -> Quota {
        Quota::try_with_period(period)
            .unwrap_or_else(|e| panic!("Quota::with_period({period:?}): {e}"))
    }

    /// The same rate with a capacity of `burst` tokens.
    ///
    /// # Panics
    /// If `burst` is zero or `burst * emission_interval` is longer than
    /// [`Quota::MAX_DEPTH`]. [`Quota::try_with_burst`] returns the error instead.
    pub fn with_burst(self, burst: u32) -> Quota {
        self.try_with_burst(burst)
            .unwrap_or_else(|e| panic!("Quota::with_burst({burst}): {e}"))
    }

    /// Fallible [`Quota::per_second`]: [`QuotaError::ZeroRate`] for 0, and
    /// [`QuotaError::RateTooHigh`] above 10^9 (an emission interval below one nanosecond).
    pub fn try_per_second(n: u32) -> Result<Quota, QuotaError> {
        Quota::per_period_ns(n, NANOS_PER_SECOND)
    }

    /// Fallible [`Quota::per_minute`].
    pub fn try_per_minute(n: u32) -> Result<Quota, QuotaError> {
        Quota::per_period_ns(n, NANOS_PER_MINUTE)
    }

    /// Fallible [`Quota::per_hour`].
    pub fn try_per_hour(n: u32) -> Result<Quota, QuotaError> {
        Quota::per_period_ns(n, NANOS_PER_HOUR)
    }

    /// Fallible [`Quota::with_period`].
    pub fn try_with_period(period: Duration) -> Result<Quota, QuotaError> {
        Quota::try_new(period, 1)
    }

    /// Fallible [`Quota::with_burst`].
    pub fn try_with_burst(self, burst: u32) -> Result<Quota, QuotaError> {
        Quota::from_parts(self.interval_ns, burst)
    }

    /// One server's share of this quota when `n` servers enforce it together without a central
    /// store: a rate `n` times slower (emission interval times `n`) and a burst of `burst / n`
    /// rounded down, at least 1.
    ///
    /// Inaccuracy: the shares add up to at most the global rate, and to at most the global
    /// burst when `burst >= n` (each share's burst is at least 1, so with `burst < n` the
    /// servers together can burst `n`). Under skewed load the global limit is under-used: a
    /// server that receives most of the traffic is held to its `1/n` share while the others'
    /// shares go unspent. With load spread evenly (round-robin) it is close to exact. When
    /// that matters, keep the bucket in one place (the Redis backend).
    ///
    /// ```
    /// use cellrate::Quota;
    /// use std::time::Duration;
    ///
    /// let share = Quota::per_second(100).with_burst(20).split(4);
    /// assert_eq!(share.emission_interval(), Duration::from_millis(40)); // 25/s
    /// assert_eq!(share.burst(), 5);
    /// ```
    ///
    /// # Panics
    /// If `n` is zero or the share's interval overflows. [`Quota::try_split`] returns the error.
    pub fn split(self, n: u32) -> Quota {
        self.try_split(n)
            .unwrap_or_else(|e| panic!("Quota::split({n}): {e}"))
    }

    /// Fallible [`Quota::split`].
    pub fn try_split(self, n: u32) -> Result<Quota, QuotaError> {
        let n = NonZeroU32::new(n).ok_or(QuotaError::ZeroShares)?;
        let interval_ns = self
            .interval_ns
            .checked_mul(u64::from(n.get()))
            .ok_or(QuotaError::PeriodTooLong)?;
        Quota::from_parts(interval_ns, (self.burst / n).max(1))
    }

    /// One token every `emission_interval`, at most `burst` saved: the general constructor.
    pub fn try_new(emission_interval: Duration, burst: u32) -> Result<Quota, QuotaError> {
        let ns =
            u64::try_from(emission_interval.as_nanos()).map_err(|_| QuotaError::PeriodTooLong)?;
        Quota::from_parts(ns, burst)
    }

    fn per_period_ns(n: u32, period_ns: u64) -> Result<Quota, QuotaError> {
        let n = NonZeroU32::new(n).ok_or(QuotaError::ZeroRate)?;
        if u64::from(n.get()) > period_ns {
            return Err(QuotaError::RateTooHigh {
                n: n.get(),
                period_ns,
            });
        }
        // Round the interval up: the long-run rate never exceeds what was configured.
        let interval_ns = period_ns.div_ceil(u64::from(n.get()));
        Quota::from_parts(interval_ns, n.get())
    }

    fn from_parts(interval_ns: u64, burst: u32) -> Result<Quota, QuotaError> {
        if interval_ns == 0 {
            return Err(QuotaError::ZeroPeriod);
        }
        if interval_ns > crate::gcra::MAX_AHEAD {
            return Err(QuotaError::PeriodTooLong);
        }
        if burst == 0 {
            return Err(QuotaError::ZeroBurst);
        }
        let depth_ns = interval_ns
            .checked_mul(u64::from(burst))
            .filter(|&depth| depth <= crate::gcra::MAX_AHEAD)
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

    /// The emission interval in nanoseconds (at least 1).
    #[inline]
    pub fn emission_interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// The bucket depth, `burst * emission_interval`, in nanoseconds.
    #[inline]
    pub fn depth_ns(&self) -> u64 {
        self.depth_ns
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
