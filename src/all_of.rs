//! All-or-nothing checks across several limits (per user, per org, global), each limit its own
//! cost: spent one after another, the spent ones rolled back when one refuses (docs/design.md
//! §5). Each limit is decided at its own time (its limiter's reading, or its handle's `at`),
//! or all at the one time of [`AllOf::at`].

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
    use crate::nanos::Nanos;

    /// What [`Limit`](super::Limit) hides: the bucket an all-or-nothing check acts on, the
    /// time it is decided at, and where what it decides is counted.
    pub trait Sealed {
        /// The bucket, with its clock.
        fn bucket_ref(&self) -> BucketRef<'_, dyn Clock + '_>;

        /// The time passed in (a view from `at(now)`), or `None` for the limiter's reading.
        fn at(&self) -> Option<Nanos>;

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

    fn at(&self) -> Option<Nanos> {
        None
    }

    #[cfg(feature = "std")]
    fn named(&self) -> Option<&crate::engine::counting::Named> {
        self.named.as_deref()
    }
}

impl<C: Clock> Limit for Limiter<C> {}

/// Several limits checked together, each with its cost. Build it with [`all_of`].
#[derive(Clone, Copy)]
pub struct AllOf<'s, 'a> {
    limits: &'s [(&'a dyn Limit, u32)],
    at: Option<Nanos>,
}

/// Checks a request against every limit in `limits`, each with its own cost, spending in all
/// of them or in none. Lock-free: a refusal rolls back the spends before it, exactly when
/// nothing else touched those buckets meanwhile, else at most what each spend still holds; a
/// concurrent request may be refused for tokens then given back, never admitted beyond a limit.
///
/// ```
/// use cellrate::{all_of, Limiter, ManualClock, Quota};
///
/// let clock = ManualClock::new();
/// let user = Limiter::with_clock(Quota::per_second(10), clock.clone());
/// let global = Limiter::with_clock(Quota::per_second(2), clock.clone());
///
/// assert!(all_of(&[(&user, 2), (&global, 2)]).check().is_ok());
/// // The global limit refuses, so the user's bucket is left as it was.
/// let denied = all_of(&[(&user, 1), (&global, 1)]).check().unwrap_err();
/// assert_eq!(user.available(), 8);
/// assert_eq!(denied.remaining(), 0); // the smallest remaining among the limits
/// ```
pub fn all_of<'s, 'a>(limits: &'s [(&'a dyn Limit, u32)]) -> AllOf<'s, 'a> {
    AllOf { limits, at: None }
}

impl<'a> AllOf<'_, 'a> {
    /// The same check with every limit decided at `now` instead of its limiter's reading (as
    /// `limiter.at(now)` does for one limiter): pass times from one clock.
    pub fn at(self, now: Nanos) -> Self {
        AllOf {
            at: Some(now),
            ..self
        }
    }

    /// The time limit `limit` is decided at: this check's, or its own.
    fn time_of(&self, limit: &dyn Limit) -> Option<Nanos> {
        self.at.or_else(|| limit.at())
    }

    /// Spends each limit's cost in every limit, or in none (an empty set admits everything),
    /// and answers for all of them together.
    ///
    /// Admitted: the smallest `remaining` and longest `reset_after` among the limits. Refused:
    /// nothing stays spent, and the answer carries the longest `retry_after` (`None` if any
    /// limit can never admit its cost), the smallest `remaining` and the longest
    /// `reset_after` among all the limits, as they stand after the rollback.
    pub fn check(&self) -> Result<Allowed, Denied> {
        match self.check_each() {
            Ok(each) => Ok(each
                .into_iter()
                .fold(Allowed::unlimited(), |all, one| all.stricter(one))),
            Err(each) => {
                let worst = each.iter().find_map(|one| one.err());
                let worst = worst.expect("a refusal has a refusing limit");
                Err(each.into_iter().fold(worst, |all, one| all.stricter(one)))
            }
        }
    }

    /// [`check`](Self::check), answered limit by limit: all admitted, each with its bucket
    /// after its spend; or refused, nothing spent, each limit with what it says now (its
    /// refusal, or a peek of its bucket if it would admit its cost).
    ///
    /// ```
    /// use cellrate::{all_of, Limiter, ManualClock, Quota};
    ///
    /// let clock = ManualClock::new();
    /// let user = Limiter::with_clock(Quota::per_second(10), clock.clone());
    /// let global = Limiter::with_clock(Quota::per_second(2), clock.clone());
    /// let each = all_of(&[(&user, 3), (&global, 3)]).check_each().unwrap_err();
    /// assert_eq!(each[0].unwrap().remaining(), 10); // would admit 3, spent nothing
    /// assert!(each[1].is_err()); // 3 is above the global burst
    /// ```
    pub fn check_each(&self) -> Result<Vec<Allowed>, Vec<Result<Allowed, Denied>>> {
        let mut admitted = Vec::with_capacity(self.limits.len());
        match spend_all(self.limits, self.at, &mut admitted) {
            Ok(()) => Ok(admitted),
            Err((refused, denied)) => Err(self.limits_now(refused, denied)),
        }
    }

    /// Books each limit's cost in every limit, or in none, each ready within `max_wait`: one
    /// [`Reservation`] per limit, in order, to wait for, cancel or settle one by one.
    ///
    /// ```
    /// use cellrate::{all_of, Limiter, ManualClock, Quota};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let user = Limiter::with_clock(Quota::per_second(10), clock.clone());
    /// let global = Limiter::with_clock(Quota::per_second(100), clock.clone());
    /// let booked = all_of(&[(&user, 3), (&global, 3)]).reserve(Duration::ZERO).unwrap();
    /// for reservation in booked {
    ///     reservation.cancel(); // the request was not carried out after all
    /// }
    /// assert_eq!((user.available(), global.available()), (10, 100));
    /// ```
    pub fn reserve(
        &self,
        max_wait: Duration,
    ) -> Result<Vec<Reservation<'a, dyn Clock + 'a>>, Denied> {
        let mut booked = Vec::with_capacity(self.limits.len());
        for (i, &(limit, cost)) in self.limits.iter().enumerate() {
            let (bucket, at) = (limit.bucket_ref(), self.time_of(limit));
            match Reservation::book(bucket.clone(), cost, max_wait, bucket.time(at)) {
                Ok(reservation) => booked.push(reservation),
                Err(denied) => {
                    // The last one first, so that each is on top of its bucket when it is given
                    // back.
                    while let Some(reservation) = booked.pop() {
                        let at = self.time_of(self.limits[booked.len()].0);
                        match at {
                            Some(now) => reservation.cancel_at(now),
                            None => reservation.cancel(),
                        }
                    }
                    let each = self.limits_now(i, bucket.lagged(at, denied));
                    let worst = each
                        .iter()
                        .fold(each[i].unwrap_err(), |all, one| all.stricter(*one));
                    return Err(worst);
                }
            }
        }
        Ok(booked)
    }

    /// Each limit's answer after a refusal by limit `refused` (`denied`): that refusal for it,
    /// and for every other limit what a check of its cost would say now, admitting ones as a
    /// peek.
    fn limits_now(&self, refused: usize, denied: Denied) -> Vec<Result<Allowed, Denied>> {
        self.limits
            .iter()
            .enumerate()
            .map(|(i, &(limit, cost))| {
                if i == refused {
                    return Err(denied);
                }
                let (bucket, at) = (limit.bucket_ref(), self.time_of(limit));
                let now = bucket.time(at).as_u64();
                bucket
                    .evaluate(cost, now)
                    .and_then(|_| bucket.evaluate(0, now))
                    .map_err(|denied| bucket.lagged(at, denied))
            })
            .collect()
    }
}

/// Spends in `limits[0]`, then the rest, pushing each admission; when the rest refuses, gives
/// `limits[0]`'s spend back. The recursion keeps each receipt on the stack, and its depth is
/// the number of limits. A refusal names the limit that refused, with its answer.
fn spend_all(
    limits: &[(&dyn Limit, u32)],
    time: Option<Nanos>,
    admitted: &mut Vec<Allowed>,
) -> Result<(), (usize, Denied)> {
    let Some((&(first, cost), rest)) = limits.split_first() else {
        return Ok(());
    };
    let (bucket, at) = (first.bucket_ref(), time.or_else(|| first.at()));
    let now = bucket.time(at);
    let (receipt, booking) = bucket
        .book(cost, now.as_u64(), 0)
        .map_err(|denied| (admitted.len(), bucket.lagged(at, denied)))?;
    admitted.push(booking.allowed);
    spend_all(rest, time, admitted).inspect_err(|_| {
        bucket.give_back(&receipt, cost, at);
    })
}
