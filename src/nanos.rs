//! `Nanos`: an instant on a limiter's clock, in integer nanoseconds since the clock's origin.

use core::fmt;
use core::time::Duration;

/// An instant on a [`Clock`](crate::Clock): whole nanoseconds since the clock's origin.
///
/// Every decision in this crate is made on `Nanos`, never on floating point. A `u64` of
/// nanoseconds covers about 584 years from the origin.
///
/// ```
/// use cellrate::Nanos;
/// use std::time::Duration;
///
/// let t = Nanos::new(1_500);
/// assert_eq!(t.as_u64(), 1_500);
/// assert_eq!(t.saturating_add(Duration::from_nanos(500)), Nanos::new(2_000));
/// assert!(Nanos::new(1) < t);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Nanos(u64);

impl Nanos {
    /// The clock's origin.
    pub const ZERO: Nanos = Nanos(0);
    /// The last representable instant, about 584 years after the origin.
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// The instant `ns` nanoseconds after the origin.
    #[inline]
    pub const fn new(ns: u64) -> Nanos {
        Nanos(ns)
    }

    /// Nanoseconds since the origin.
    #[inline]
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// The instant `by` later, stopping at [`Nanos::MAX`].
    #[inline]
    pub fn saturating_add(self, by: Duration) -> Nanos {
        u64::try_from(by.as_nanos())
            .ok()
            .and_then(|by| self.0.checked_add(by))
            .map_or(Nanos::MAX, Nanos)
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later.
    #[inline]
    pub fn saturating_duration_since(self, earlier: Nanos) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl From<Nanos> for Duration {
    fn from(n: Nanos) -> Duration {
        Duration::from_nanos(n.0)
    }
}

impl fmt::Debug for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Nanos({})", self.0)
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ns", self.0)
    }
}
