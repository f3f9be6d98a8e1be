//! All-or-nothing checks across several limits (per user, per org, global): spend in every
//! bucket or in none.
//!
//! Lock-free: the buckets are spent one after another in the order given, and when one refuses,
//! those already spent are rolled back.
//!
//! # Rollback, exactly
//! - If nothing else wrote to a bucket between the spend and the rollback (the common case),
//!   its TAT goes back to exactly the value it had: as if the check had never run.
//! - If other spends landed on top, the TAT becomes the larger of `TAT - cost * T` and
//!   `max(before, now) + (TAT - after)`, never above the current TAT (`before`/`after`: the
//!   TAT around this check's spend). When every spend involved happened at the same instant,
//!   this is again exactly the TAT the other spends alone would have left.
//!
//! # What a concurrent observer can see, and why no limit is ever exceeded
//! Between a spend and its rollback, another request may find the bucket lower than it will
//! end up, and be refused because of tokens that are then given back. It is never admitted
//! beyond a limit: admissions only happen through a bucket's own CAS-checked spend, which
//! compares against a TAT that is at least the TAT of the admitted spends alone (the refused
//! check's spend only adds to it). After the rollback the TAT is still at least that: a later
//! spend `i` at time `t_i` made the TAT `max(TAT, t_i) + c_i * T`, which is 1-Lipschitz and
//! non-decreasing in the TAT, so without our spend the later ones would have reached at most
//! `max(before, max t_i) + (TAT - after)`; the rollback never goes below this as long as
//! `t_i <= now`. [`AllOf::check_n`] makes that hold by reading the clock again for the
//! rollback (a spend that landed before the rollback read its clock earlier). With
//! [`AllOf::check_n_at`], pass times from one clock, as for any shared bucket.
//!
//! The loom models in `loom-tests/tests/all_of.rs` check this: no bucket admits more than its
//! burst, and a refused check leaves every TAT exactly as the admitted checks alone would.

use crate::bucket_ref::BucketRef;
use crate::clock::Clock;
use crate::limiter::Limiter;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};

pub(crate) mod sealed {
    use crate::bucket_ref::BucketRef;
    use crate::clock::Clock;

    /// What [`Limit`](super::Limit) hides: the bucket an all-or-nothing check acts on.
    pub trait Sealed {
        /// The bucket, with its clock.
        fn bucket_ref(&self) -> BucketRef<'_, dyn Clock + '_>;
    }
}

/// A bucket that can take part in an [`all_of`] check: a [`Limiter`], or one key of a keyed
/// limiter ([`KeyedBucket`](crate::KeyedBucket), from `KeyedLimiter::key`). Sealed.
pub trait Limit: sealed::Sealed {}

impl<C: Clock> sealed::Sealed for Limiter<C> {
    fn bucket_ref(&self) -> BucketRef<'_, dyn Clock + '_> {
        Limiter::bucket_ref(self).erased()
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

impl AllOf<'_> {
    /// Spends one token in every limit, or in none.
    pub fn check(&self) -> Result<Allowed, Denied> {
        self.check_n(1)
    }

    /// Spends `cost` tokens in every limit, or in none. Time comes from the first limit's
    /// clock (an empty set admits everything).
    pub fn check_n(&self, cost: u32) -> Result<Allowed, Denied> {
        match self.limits.first() {
            Some(first) => {
                let bucket = first.bucket_ref();
                self.spend_or_refuse(cost, bucket.now(), true)
                    .map_err(|denied| bucket.lagged_now(denied))
            }
            None => Ok(Allowed::unlimited()),
        }
    }

    /// Spends `cost` tokens at `now` in every limit, or in none.
    ///
    /// Admitted: the smallest `remaining` and longest `reset_after` among the limits. Refused:
    /// nothing stays spent, and the answer carries the longest `retry_after` (`None` if any
    /// limit can never admit the cost), the smallest `remaining` and the longest
    /// `reset_after` among all the limits, as they stand after the rollback.
    pub fn check_n_at(&self, cost: u32, now: Nanos) -> Result<Allowed, Denied> {
        self.spend_or_refuse(cost, now, false)
    }

    /// Spends everywhere or nowhere; with `reread_clock`, each rollback reads its limit's clock
    /// again and uses the later of the two times.
    fn spend_or_refuse(
        &self,
        cost: u32,
        now: Nanos,
        reread_clock: bool,
    ) -> Result<Allowed, Denied> {
        spend_all(self.limits, cost, now, reread_clock).map_err(|refusal| {
            self.limits.iter().fold(refusal, |worst, limit| {
                // A limit that would refuse brings its retry_after; one that would admit, its
                // level now (a peek), not the level after a spend that did not happen.
                let bucket = limit.bucket_ref();
                let now = now.as_u64();
                worst.stricter(
                    bucket
                        .evaluate(cost, now)
                        .and_then(|_| bucket.evaluate(0, now)),
                )
            })
        })
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

    /// Deliberately broken `check_n_at`: rolls back by storing each TAT from before the spend
    /// blindly, wherever the bucket is now. Only for the loom models, which must catch it.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn check_n_at_with_blind_rollback(&self, cost: u32, now: Nanos) -> Result<Allowed, Denied> {
        let mut spent = alloc::vec::Vec::new();
        for limit in self.limits {
            let bucket = limit.bucket_ref();
            match bucket.book(cost, now.as_u64(), 0) {
                Ok((change, _)) => spent.push((bucket, change)),
                Err(denied) => {
                    for (bucket, change) in spent {
                        bucket.restore_racy(change);
                    }
                    return Err(denied);
                }
            }
        }
        Ok(Allowed::unlimited())
    }
}

/// Spends in `limits[0]`, then the rest; when the rest refuses, rolls `limits[0]` back. The
/// recursion keeps each undo record on the stack: no allocation, depth = number of limits.
fn spend_all(
    limits: &[&dyn Limit],
    cost: u32,
    now: Nanos,
    reread_clock: bool,
) -> Result<Allowed, Denied> {
    let Some((first, rest)) = limits.split_first() else {
        return Ok(Allowed::unlimited());
    };
    let bucket = first.bucket_ref();
    let (change, booking) = bucket.book(cost, now.as_u64(), 0)?;
    match spend_all(rest, cost, now, reread_clock) {
        Ok(others) => Ok(booking.allowed.stricter(others)),
        Err(refusal) => {
            let now = if reread_clock {
                now.max(bucket.now())
            } else {
                now
            };
            bucket.undo(change, cost, now.as_u64());
            Err(refusal)
        }
    }
}
