//! `Limiter`: one bucket, one quota at a time, one clock.

use crate::at::At;
use crate::clock::{Clock, Reading};
use crate::engine::bucket_ref::BucketRef;
use crate::engine::gcra;
use crate::engine::quota_cells::Cells;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;

#[cfg(feature = "std")]
use crate::clock::tick_clock::TickClock;
#[cfg(feature = "std")]
use crate::engine::counting::{self as named, Named};

/// The clock a `Limiter` uses when none is named; without `std` it only fills the type slot.
#[cfg(feature = "std")]
type DefaultClock = TickClock;
#[cfg(not(feature = "std"))]
type DefaultClock = crate::clock::ManualClock;

/// A lock-free rate limiter: one GCRA bucket (a single `AtomicU64`) with its quota and clock.
///
/// Checks take `&self` and never lock: share one `Limiter` by reference or in an `Arc`.
/// Decisions are exactly those of a token bucket with the same quota (see the crate docs).
///
/// ```
/// use cellrate::{Limiter, ManualClock, Quota};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let limiter = Limiter::with_clock(Quota::per_second(2).with_burst(6), clock.clone());
/// for _ in 0..6 {
///     assert!(limiter.check().is_ok());
/// }
/// let denied = limiter.check().unwrap_err();
/// assert_eq!(denied.retry_after(), Some(Duration::from_millis(500)));
/// clock.advance(Duration::from_millis(500));
/// assert!(limiter.check().is_ok());
/// ```
#[derive(Debug)]
pub struct Limiter<C: Clock = DefaultClock> {
    pub(crate) cells: Cells,
    clock: C,
    /// How every operation reads `clock`: fixed when the limiter is built.
    reading: Reading,
    #[cfg(feature = "std")]
    pub(crate) named: Option<Box<Named>>,
}

#[cfg(feature = "std")]
impl Limiter<TickClock> {
    /// A full limiter on a new [`TickClock`]: exact for quotas shallower than 16 ms, in steps of
    /// 1 ms above (see [`TickClock`]).
    pub fn new(quota: Quota) -> Limiter<TickClock> {
        Limiter::with_clock(quota, TickClock::new())
    }
}

impl<C: Clock> Limiter<C> {
    /// A full limiter reading time from `clock`, the way `quota` fixes for every later
    /// operation: a [`TickClock`](crate::TickClock)'s cached time if `quota` is at least 16 ms
    /// deep, its exact time if not, whatever [`set_quota`](Self::set_quota) brings later.
    pub fn with_clock(quota: Quota, clock: C) -> Limiter<C> {
        Limiter {
            cells: Cells::new(quota, 0),
            clock,
            reading: Reading::for_quota(&quota),
            #[cfg(feature = "std")]
            named: None,
        }
    }

    /// With `on`, the same limiter but empty now, full one bucket depth later: for cold starts
    /// that must not burst (many instances restarting after a deploy). With `false`, as it is.
    ///
    /// ```
    /// use cellrate::{Limiter, Quota};
    ///
    /// let limiter = Limiter::new(Quota::per_second(10)).start_empty(true);
    /// assert!(limiter.check().is_err());
    /// ```
    pub fn start_empty(self, on: bool) -> Limiter<C> {
        if !on {
            return self;
        }
        let (quota, now) = (self.quota(), self.reading.now(&self.clock));
        let limiter = Limiter {
            cells: Cells::new(quota, gcra::empty_at(now.as_u64(), &quota)),
            ..self
        };
        #[cfg(feature = "std")]
        if limiter.named.is_some() {
            limiter.cells.move_head();
        }
        limiter
    }

    /// Spends one token now if there is one.
    #[inline]
    pub fn check(&self) -> Result<Allowed, Denied> {
        self.check_n(1)
    }

    /// Spends `cost` tokens now if all of them are there; otherwise spends nothing. `cost == 0`
    /// is a peek; `cost > burst` is denied with [`Denied::retry_after`] `None`.
    #[inline]
    pub fn check_n(&self, cost: u32) -> Result<Allowed, Denied> {
        let now = self.reading.now(&self.clock);
        self.spend(cost, now)
            .map_err(|denied| self.reading.lagged(&self.clock, denied))
    }

    /// This limiter at a time passed in, so that one clock reading can serve many checks:
    /// `limiter.at(now).check_n(3)` (see [`At`]).
    #[inline]
    pub fn at(&self, now: Nanos) -> At<'_, Self> {
        At::new(self, now)
    }

    /// Spends `cost` tokens at `now`, counted if the limiter is named.
    #[inline]
    pub(crate) fn spend(&self, cost: u32, now: Nanos) -> Result<Allowed, Denied> {
        // The last closure runs only on the moved path, which a named limiter's checks take.
        self.cells.spend_then(
            cost,
            move |_| now.as_u64(),
            move |_decision| {
                #[cfg(feature = "std")]
                named::count(&self.named, cost, _decision);
            },
        )
    }

    /// Whole tokens available now. Spends nothing.
    #[inline]
    pub fn available(&self) -> u32 {
        self.available_at(self.reading.now(&self.clock))
    }

    #[inline]
    pub(crate) fn available_at(&self, now: Nanos) -> u32 {
        self.cells.available(|_| now.as_u64())
    }

    /// The quota this limiter enforces: the one it was made with, or the last one set by
    /// [`Limiter::set_quota`].
    #[inline]
    pub fn quota(&self) -> Quota {
        self.cells.quota()
    }

    /// The clock this limiter reads.
    #[inline]
    pub fn clock(&self) -> &C {
        &self.clock
    }

    #[inline]
    pub(crate) fn cells(&self) -> &Cells {
        &self.cells
    }

    #[inline]
    pub(crate) fn reading(&self) -> Reading {
        self.reading
    }

    /// This limiter's bucket, for reservations and [`all_of`](crate::all_of).
    #[inline]
    pub(crate) fn bucket_ref(&self) -> BucketRef<'_, C> {
        BucketRef {
            store: &self.cells,
            id: 0,
            quota: self.quota(),
            clock: &self.clock,
            reading: self.reading,
            start_empty: false,
        }
    }
}

/// [`Limiter::at`]: the limiter's operations at a time passed in.
impl<'a, C: Clock> At<'a, Limiter<C>> {
    /// [`Limiter::check`] at this time.
    #[inline]
    pub fn check(&self) -> Result<Allowed, Denied> {
        self.of.spend(1, self.now)
    }

    /// [`Limiter::check_n`] at this time.
    #[inline]
    pub fn check_n(&self, cost: u32) -> Result<Allowed, Denied> {
        self.of.spend(cost, self.now)
    }

    /// [`Limiter::available`] at this time.
    #[inline]
    pub fn available(&self) -> u32 {
        self.of.available_at(self.now)
    }
}
