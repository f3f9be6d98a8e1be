//! `Allowed` and `Denied`: what a check answers, with the figures an HTTP 429 needs, kept as
//! nanoseconds so that the hot path has no division (docs/design.md §1).

use core::fmt;
use core::time::Duration;

/// The bucket after a decision: how far its theoretical arrival time is ahead of `now`.
#[derive(Clone, Copy)]
pub(crate) struct Level {
    /// `TAT - now`, at least 0.
    pub(crate) reset_after_ns: u64,
    pub(crate) depth_ns: u64,
    /// At least 1.
    pub(crate) interval_ns: u64,
}

impl Level {
    /// A level that reports exactly `remaining` tokens and `reset_after_ns` (a combination of
    /// buckets): with an interval of 1 ns the token count is `depth - reset_after`.
    fn exact(reset_after_ns: u64, remaining: u32) -> Level {
        Level {
            reset_after_ns,
            depth_ns: reset_after_ns.saturating_add(u64::from(remaining)),
            interval_ns: 1,
        }
    }

    /// The level of a bucket of the given figures, an interval of 0 taken as 1 ns.
    fn figures(reset_after_ns: u64, depth_ns: u64, interval_ns: u64) -> Level {
        Level {
            reset_after_ns,
            depth_ns,
            interval_ns: interval_ns.max(1),
        }
    }

    /// A level of no spendable tokens, full again in `reset_after_ns` (an unrepresentable TAT).
    pub(crate) fn unusable(reset_after_ns: u64, interval_ns: u64) -> Level {
        Level {
            reset_after_ns,
            depth_ns: reset_after_ns,
            interval_ns,
        }
    }

    /// The stricter of two levels: the fewer tokens and the longer time to full.
    fn stricter(self, other: Level) -> Level {
        Level::exact(
            self.reset_after_ns.max(other.reset_after_ns),
            self.remaining().min(other.remaining()),
        )
    }

    /// Whole tokens in the bucket: `floor((depth - reset_after) / interval)`, 0 if overdrawn.
    #[inline]
    fn remaining(&self) -> u32 {
        let tokens = self.depth_ns.saturating_sub(self.reset_after_ns) / self.interval_ns;
        // tokens <= depth / interval = burst, a u32.
        tokens as u32
    }
}

/// A request that was admitted. Its tokens are spent.
///
/// Two answers are equal when they report the same `remaining` and `reset_after`.
#[derive(Clone, Copy)]
pub struct Allowed {
    level: Level,
}

impl Allowed {
    #[inline]
    pub(crate) fn new(level: Level) -> Allowed {
        Allowed { level }
    }

    /// Whole tokens left after this request.
    #[inline]
    pub fn remaining(&self) -> u32 {
        self.level.remaining()
    }

    /// The answer of a bucket `depth_ns` deep, one token every `interval_ns` (at least 1), that
    /// admitted a request and is `reset_after_ns` from full: what a backend keeping its own
    /// figures reports. `remaining` is `floor((depth - reset_after) / interval)`.
    ///
    /// ```
    /// use cellrate::Allowed;
    ///
    /// // 100 ms a token, 10 deep, 250 ms from full: 7 whole tokens left.
    /// let allowed = Allowed::from_figures(250_000_000, 1_000_000_000, 100_000_000);
    /// assert_eq!(allowed.remaining(), 7);
    /// ```
    pub fn from_figures(reset_after_ns: u64, depth_ns: u64, interval_ns: u64) -> Allowed {
        Allowed::new(Level::figures(reset_after_ns, depth_ns, interval_ns))
    }

    /// An answer for a request that no bucket limits: `u32::MAX` remaining, full now (a
    /// backend that admits while its store cannot be reached).
    pub fn unlimited() -> Allowed {
        Allowed::new(Level::exact(0, u32::MAX))
    }

    /// The answer for a request admitted by two buckets: the smaller `remaining` and the
    /// longer `reset_after` of the two.
    pub fn stricter(self, other: Allowed) -> Allowed {
        Allowed::new(self.level.stricter(other.level))
    }

    /// Time until the bucket is full again if nothing more is spent.
    #[inline]
    pub fn reset_after(&self) -> Duration {
        Duration::from_nanos(self.level.reset_after_ns)
    }
}

/// A request that was refused. Nothing was spent.
///
/// Two answers are equal when they report the same `retry_after`, `remaining` and
/// `reset_after`.
#[derive(Clone, Copy)]
pub struct Denied {
    level: Level,
    retry_after_ns: Option<u64>,
}

impl Denied {
    /// The refusal of a spend from a moved limiter bucket, never returned: no figures.
    pub(crate) const MOVED: Denied = Denied {
        level: Level {
            reset_after_ns: 0,
            depth_ns: 0,
            interval_ns: 0,
        },
        retry_after_ns: None,
    };

    /// Whether the request could pass later (it has a `retry_after`).
    #[inline]
    pub(crate) fn can_pass(&self) -> bool {
        self.retry_after_ns.is_some()
    }

    #[inline]
    pub(crate) fn new(level: Level, retry_after_ns: Option<u64>) -> Denied {
        Denied {
            level,
            retry_after_ns,
        }
    }

    /// The refusal of a bucket with the figures of [`Allowed::from_figures`], where the same
    /// request passes after `retry_after_ns` (`None`: never).
    ///
    /// ```
    /// use cellrate::Denied;
    /// use std::time::Duration;
    ///
    /// let denied = Denied::from_figures(1_000_000_000, 1_000_000_000, 100_000_000, Some(1_000));
    /// assert_eq!(denied.remaining(), 0);
    /// assert_eq!(denied.retry_after(), Some(Duration::from_micros(1)));
    /// ```
    pub fn from_figures(
        reset_after_ns: u64,
        depth_ns: u64,
        interval_ns: u64,
        retry_after_ns: Option<u64>,
    ) -> Denied {
        Denied::new(
            Level::figures(reset_after_ns, depth_ns, interval_ns),
            retry_after_ns,
        )
    }

    /// How long to wait before the same request would be admitted: on an exact reading it
    /// passes at exactly `now + retry_after` (if nothing else is spent meanwhile), not sooner.
    /// On a reading that may lag (the default [`TickClock`](crate::TickClock)'s cached time) it
    /// also covers the lag ([`Clock::lag_within`](crate::Clock::lag_within)), so that a retry
    /// `retry_after` later passes although its own reading may lag too.
    ///
    /// `None` when the request can never pass: its cost exceeds the burst, or (within one
    /// bucket depth of [`Nanos::MAX`](crate::Nanos::MAX)) its time cannot be represented.
    #[inline]
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after_ns.map(Duration::from_nanos)
    }

    /// This refusal with `lag_ns` more to wait (`None` past `u64::MAX` ns).
    #[inline]
    pub(crate) fn later_by(self, lag_ns: u64) -> Denied {
        if lag_ns == 0 {
            return self;
        }
        Denied {
            retry_after_ns: self.retry_after_ns.and_then(|r| r.checked_add(lag_ns)),
            ..self
        }
    }

    /// Whole tokens in the bucket now, fewer than the request asked for (0 when its time cannot
    /// be represented).
    #[inline]
    pub fn remaining(&self) -> u32 {
        self.level.remaining()
    }

    /// Time until the bucket is full again.
    #[inline]
    pub fn reset_after(&self) -> Duration {
        Duration::from_nanos(self.level.reset_after_ns)
    }

    /// The answer for a request refused by `self`'s bucket, given what another bucket says:
    /// the longest `retry_after` (`None` is the longest), the smallest `remaining`, the longest
    /// `reset_after`.
    pub fn stricter(self, other: Result<Allowed, Denied>) -> Denied {
        match other {
            Ok(allowed) => Denied::new(self.level.stricter(allowed.level), self.retry_after_ns),
            Err(denied) => {
                let retry = match (self.retry_after_ns, denied.retry_after_ns) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
                Denied::new(self.level.stricter(denied.level), retry)
            }
        }
    }
}

impl PartialEq for Allowed {
    fn eq(&self, other: &Allowed) -> bool {
        (self.remaining(), self.level.reset_after_ns)
            == (other.remaining(), other.level.reset_after_ns)
    }
}

impl Eq for Allowed {}

impl PartialEq for Denied {
    fn eq(&self, other: &Denied) -> bool {
        (
            self.retry_after_ns,
            self.remaining(),
            self.level.reset_after_ns,
        ) == (
            other.retry_after_ns,
            other.remaining(),
            other.level.reset_after_ns,
        )
    }
}

impl Eq for Denied {}

impl fmt::Debug for Allowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Allowed")
            .field("remaining", &self.remaining())
            .field("reset_after", &self.reset_after())
            .finish()
    }
}

impl fmt::Debug for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Denied")
            .field("retry_after", &self.retry_after())
            .field("remaining", &self.remaining())
            .field("reset_after", &self.reset_after())
            .finish()
    }
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.retry_after() {
            Some(wait) => write!(f, "rate limited: retry after {wait:?}"),
            None => f.write_str("rate limited: the request can never pass (cost above burst)"),
        }
    }
}

impl core::error::Error for Denied {}
