//! All-or-nothing checks across several limits (per user, per org, global): spend in every
//! bucket or in none.
//!
//! Lock-free: the buckets are spent one after another in the order given, and when one refuses,
//! those already spent are rolled back.
//!
//! # Rollback, exactly
//! A rollback is a give-back of the spend it undoes, by the one rule of every give-back
//! (docs/design.md, section 5): if nothing else was booked, spent or given back on the bucket
//! between the spend and the rollback (the common case), its TAT goes back to exactly the
//! state it had, as if the check had never run; otherwise it returns at most what the spend
//! still holds. A concurrent request may meanwhile find the bucket lower than it ends up, and
//! be refused because of tokens that are then given back; it is never admitted beyond a limit.
//!
//! # Time
//! Each limit is decided at its own bucket's time (`check_n`), the reading every other
//! operation on that bucket uses, or at the one time passed in (`check_n_at`: pass times from
//! one clock, as for any shared bucket). A rollback without a time passed in reads its
//! bucket's time again, after loading the TAT, so that it is no earlier than any spend it
//! undoes beneath.
//!
//! The loom models in `loom-tests/tests/all_of.rs` check this: no bucket admits more than its
//! burst, and a refused check leaves every bucket as the admitted checks alone would.

use crate::clock::Clock;
use crate::engine::bucket_ref::BucketRef;
use crate::limiter::Limiter;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::reservation::Reservation;
use alloc::vec::Vec;
use core::time::Duration;

pub(crate) mod sealed {
    use crate::clock::Clock;
    use crate::engine::bucket_ref::BucketRef;
    #[cfg(feature = "std")]
    use crate::engine::counting::Named;

    /// What [`Limit`](super::Limit) hides: the bucket an all-or-nothing check acts on, and
    /// where what it decides is counted.
    pub trait Sealed {
        /// The bucket, with its clock.
        fn bucket_ref(&self) -> BucketRef<'_, dyn Clock + '_>;

        /// The limiter's name and counts, if it is named (counting needs `std`).
        #[cfg(feature = "std")]
        fn named(&self) -> Option<&Named>;
    }
}

/// A bucket that can take part in an [`all_of`] check: a [`Limiter`], or one key of a keyed
/// limiter ([`KeyedBucket`](crate::KeyedBucket), from `KeyedLimiter::key`). Sealed.
pub trait Limit: sealed::Sealed {}

impl<C: Clock> sealed::Sealed for Limiter<C> {
    fn bucket_ref(&self) -> BucketRef<'_, dyn Clock + '_> {
        Limiter::bucket_ref(self).erased()
    }

    #[cfg(feature = "std")]
    fn named(&self) -> Option<&crate::engine::counting::Named> {
        self.named.as_deref()
    }
}

impl<C: Clock> Limit for Limiter<C> {}

/// Several limits checked together. Build it with [`all_of`].
#[derive(Clone, Copy)]
pub struct AllOf<'a> {
    limits: &'a [&'a dyn Limit],
}

/// Checks a request against every limit in `limits`, spending in all of them or in none.
///
/// ```
/// use cellrate::{all_of, Limiter, ManualClock, Nanos, Quota};
///
/// let clock = ManualClock::new();
/// let user = Limiter::with_clock(Quota::per_second(10), clock.clone());
/// let global = Limiter::with_clock(Quota::per_second(2), clock.clone());
///
/// assert!(all_of(&[&user, &global]).check_n(2).is_ok());
/// // The global limit refuses, so the user's bucket is left as it was.
/// let denied = all_of(&[&user, &global]).check_n(1).unwrap_err();
/// assert_eq!(user.available(), 8);
/// assert_eq!(denied.remaining(), 0); // the smallest remaining among the limits
/// ```
pub fn all_of<'a>(limits: &'a [&'a dyn Limit]) -> AllOf<'a> {
    AllOf { limits }
}

impl<'a> AllOf<'a> {
    /// Spends one token in every limit, or in none.
    pub fn check(&self) -> Result<Allowed, Denied> {
        self.check_n(1)
    }

    /// [`check`](Self::check) at a time passed in.
    pub fn check_at(&self, now: Nanos) -> Result<Allowed, Denied> {
        self.check_n_at(1, now)
    }

    /// Spends `cost` tokens in every limit, or in none, each at its own bucket's time (an
    /// empty set admits everything).
    pub fn check_n(&self, cost: u32) -> Result<Allowed, Denied> {
        self.spend_or_refuse(cost, None)
    }

    /// Spends `cost` tokens at `now` in every limit, or in none.
    ///
    /// Admitted: the smallest `remaining` and longest `reset_after` among the limits. Refused:
    /// nothing stays spent, and the answer carries the longest `retry_after` (`None` if any
    /// limit can never admit the cost), the smallest `remaining` and the longest
    /// `reset_after` among all the limits, as they stand after the rollback.
    pub fn check_n_at(&self, cost: u32, now: Nanos) -> Result<Allowed, Denied> {
        self.spend_or_refuse(cost, Some(now))
    }

    /// Books `cost` tokens in every limit, or in none, each ready within `max_wait`, each at
    /// its own bucket's time: one [`Reservation`] per limit, in the order of the limits, to wait
    /// for (the tokens are all there at the latest `ready_at`), cancel or settle one by one. A
    /// `max_wait` of zero makes it an all-or-nothing check that can be taken back.
    ///
    /// ```
    /// use cellrate::{all_of, Limit, Limiter, ManualClock, Quota};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let user = Limiter::with_clock(Quota::per_second(10), clock.clone());
    /// let global = Limiter::with_clock(Quota::per_second(100), clock.clone());
    /// let both: [&dyn Limit; 2] = [&user, &global];
    /// let booked = all_of(&both).reserve_n(3, Duration::ZERO).unwrap();
    /// for reservation in booked {
    ///     reservation.cancel(); // the request was not carried out after all
    /// }
    /// assert_eq!((user.available(), global.available()), (10, 100));
    /// ```
    pub fn reserve_n(
        &self,
        cost: u32,
        max_wait: Duration,
    ) -> Result<Vec<Reservation<'a, dyn Clock + 'a>>, Denied> {
        self.reserve_or_refuse(cost, max_wait, None)
    }

    /// [`reserve_n`](Self::reserve_n) at a time passed in.
    pub fn reserve_n_at(
        &self,
        cost: u32,
        max_wait: Duration,
        now: Nanos,
    ) -> Result<Vec<Reservation<'a, dyn Clock + 'a>>, Denied> {
        self.reserve_or_refuse(cost, max_wait, Some(now))
    }

    /// Books everywhere or nowhere: on a refusal, gives the bookings made back, the last one
    /// first (so that each is on top of its bucket when it is given back).
    fn reserve_or_refuse(
        &self,
        cost: u32,
        max_wait: Duration,
        at: Option<Nanos>,
    ) -> Result<Vec<Reservation<'a, dyn Clock + 'a>>, Denied> {
        let mut booked = Vec::with_capacity(self.limits.len());
        for limit in self.limits {
            let bucket = limit.bucket_ref();
            let now = at.unwrap_or_else(|| bucket.now());
            match Reservation::book(bucket.clone(), cost, max_wait, now) {
                Ok(reservation) => booked.push(reservation),
                Err(denied) => {
                    while let Some(reservation) = booked.pop() {
                        match at {
                            Some(now) => reservation.cancel_at(now),
                            None => reservation.cancel(),
                        }
                    }
                    return Err(self.refusal(lag(&bucket, at, denied), cost, at));
                }
            }
        }
        Ok(booked)
    }

    /// Spends everywhere or nowhere, at `at` or at each bucket's own time.
    fn spend_or_refuse(&self, cost: u32, at: Option<Nanos>) -> Result<Allowed, Denied> {
        spend_all(self.limits, cost, at).map_err(|refusal| self.refusal(refusal, cost, at))
    }

    /// The answer to a refused request: `refusal`, made stricter by what each limit says now.
    fn refusal(&self, refusal: Denied, cost: u32, at: Option<Nanos>) -> Denied {
        {
            self.limits.iter().fold(refusal, |worst, limit| {
                // A limit that would refuse brings its retry_after; one that would admit, its
                // level now (a peek), not the level after a spend that did not happen.
                let bucket = limit.bucket_ref();
                let now = at.unwrap_or_else(|| bucket.now()).as_u64();
                let answer = bucket
                    .evaluate(cost, now)
                    .and_then(|_| bucket.evaluate(0, now));
                worst.stricter(answer.map_err(|denied| lag(&bucket, at, denied)))
            })
        }
    }
}

/// A refusal of `bucket` decided at `at`, or at the bucket's own time (then with its lag).
fn lag(bucket: &BucketRef<'_, dyn Clock + '_>, at: Option<Nanos>, denied: Denied) -> Denied {
    match at {
        Some(_) => denied,
        None => bucket.lagged(denied),
    }
}

impl AllOf<'_> {
    /// Deliberately broken `check_n_at`: no rollback when a later limit refuses. Only for the
    /// loom models, which must catch it.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn check_n_at_without_rollback(&self, cost: u32, now: Nanos) -> Result<Allowed, Denied> {
        let mut answer = Allowed::unlimited();
        for limit in self.limits {
            answer = answer.stricter(limit.bucket_ref().book(cost, now.as_u64(), 0)?.1.allowed);
        }
        Ok(answer)
    }

    /// Deliberately broken `check_n` (`check_n_at` with `at`): each rollback a give-back with
    /// the step `fault` broken, such as one by value, which puts the TAT from before the
    /// spend back whenever the TAT is found equal to the one the spend left, as a give-back and
    /// a spend in between can bring about (ABA). Only for the loom models, which must catch
    /// it.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn check_n_rolling_back_faulty(
        &self,
        cost: u32,
        at: Option<Nanos>,
        fault: crate::engine::give_back::GiveBackFault,
    ) -> Result<Allowed, Denied> {
        let mut spent = alloc::vec::Vec::new();
        for limit in self.limits {
            let bucket = limit.bucket_ref();
            let now = at.unwrap_or_else(|| bucket.now());
            match bucket.book(cost, now.as_u64(), 0) {
                Ok((receipt, _)) => spent.push((bucket, receipt)),
                Err(denied) => {
                    for (bucket, receipt) in spent.iter().rev() {
                        bucket.give_back_faulty(receipt, cost, at, fault);
                    }
                    return Err(denied);
                }
            }
        }
        Ok(Allowed::unlimited())
    }
}

/// Spends in `limits[0]`, then the rest; when the rest refuses, gives `limits[0]`'s spend
/// back. The recursion keeps each receipt on the stack: no allocation, depth = number of limits.
fn spend_all(limits: &[&dyn Limit], cost: u32, at: Option<Nanos>) -> Result<Allowed, Denied> {
    let Some((first, rest)) = limits.split_first() else {
        return Ok(Allowed::unlimited());
    };
    let bucket = first.bucket_ref();
    let now = at.unwrap_or_else(|| bucket.now());
    let (receipt, booking) = bucket
        .book(cost, now.as_u64(), 0)
        .map_err(|denied| lag(&bucket, at, denied))?;
    match spend_all(rest, cost, at) {
        Ok(others) => Ok(booking.allowed.stricter(others)),
        Err(refusal) => {
            bucket.give_back(&receipt, cost, at);
            Err(refusal)
        }
    }
}
