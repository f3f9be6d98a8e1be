//! `MutexBucket`: the plain token bucket, behind a mutex: the baseline of the benchmarks, and
//! the reference of the tests' check differentials (`tests/baseline.rs`; the benches and the
//! HTTP crate's tests take this file by `#[path]`). Written on the core's public API only.
//!
//! This is the textbook bucket (a level and the time it was last updated, refilled lazily from
//! the elapsed time, under a lock) in exact fixed point: the level is kept in nanoseconds of
//! credit, one token being one emission interval, so that no rounding can differ from the GCRA
//! limiter. It is the design a lock-free GCRA bucket replaces, and it decides every check
//! exactly as a `Limiter` of the same quota does at the same times. Every check takes a lock.
//!
//! A stale `now` (earlier than the last update) is answered as of that instant: the level then
//! was lower by the refill between `now` and the last update, so a stale reading can only be
//! denied more, never granted more. This is what GCRA's `max(TAT, now)` does implicitly.
#![allow(dead_code)]

use cellrate::{Allowed, Clock, Denied, MonotonicClock, Nanos, Quota};
use std::sync::Mutex;

/// A token bucket behind a `std::sync::Mutex`, with the same inputs and outcomes as a
/// `Limiter`'s checks.
#[derive(Debug)]
pub struct MutexBucket<C: Clock = MonotonicClock> {
    /// The credit in nanoseconds (at most the depth) and the time it was stored at.
    state: Mutex<(i128, u64)>,
    interval: u64,
    depth: u64,
    burst: u32,
    clock: C,
}

impl MutexBucket<MonotonicClock> {
    /// A full bucket on a new `MonotonicClock`.
    pub fn new(quota: Quota) -> MutexBucket<MonotonicClock> {
        MutexBucket::with_clock(quota, MonotonicClock::new())
    }
}

impl<C: Clock> MutexBucket<C> {
    /// A full bucket reading time from `clock`.
    pub fn with_clock(quota: Quota, clock: C) -> MutexBucket<C> {
        let interval = quota.emission_interval().as_nanos() as u64;
        let depth = quota.replenish_all().as_nanos() as u64;
        MutexBucket {
            state: Mutex::new((i128::from(depth), 0)),
            interval,
            depth,
            burst: quota.burst(),
            clock,
        }
    }

    /// With `on`, the same bucket but empty at the clock's time now; with `false`, the bucket
    /// as it is. Within one bucket depth of `Nanos::MAX` it is full again one nanosecond short
    /// of the end of the clock, as a limiter's TAT stops there.
    pub fn start_empty(self, on: bool) -> MutexBucket<C> {
        if on {
            let now = self.clock.now().as_u64();
            let full_in = self.depth.min((u64::MAX - 1).saturating_sub(now));
            *self.lock() = (i128::from(self.depth - full_in), now);
        }
        self
    }

    /// Spends one token now if there is one.
    pub fn check(&self) -> Result<Allowed, Denied> {
        self.check_n_at(1, self.clock.now())
    }

    /// Spends `cost` tokens at `now` if all of them are there; the rules of a limiter's
    /// `check_n` at that time.
    pub fn check_n_at(&self, cost: u32, now: Nanos) -> Result<Allowed, Denied> {
        let now = now.as_u64();
        let depth = i128::from(self.depth);
        let mut state = self.lock();
        let credit = refill(*state, now, depth);
        let reset_after = |credit: i128| u64::try_from((depth - credit).max(0)).unwrap_or(u64::MAX);
        let allowed =
            |credit| Allowed::from_figures(reset_after(credit), self.depth, self.interval);
        let refused = |credit, retry| {
            Denied::from_figures(reset_after(credit), self.depth, self.interval, retry)
        };
        if cost == 0 {
            return Ok(allowed(credit));
        }
        if cost > self.burst {
            return Err(refused(credit, None));
        }
        let price = i128::from(cost) * i128::from(self.interval);
        let left = credit - price;
        // The full-again time after the spend, `now + depth - left`, must be on the clock (as
        // a TAT must, short of its last nanosecond): else the request can never pass, and
        // nothing can be spent then whatever the bucket holds.
        let full_again = u64::try_from(depth - left)
            .ok()
            .and_then(|ahead| now.checked_add(ahead))
            .filter(|&t| t < u64::MAX);
        if full_again.is_none() {
            let ahead = reset_after(credit);
            return Err(Denied::from_figures(ahead, ahead, self.interval, None));
        }
        if left < 0 {
            // The credit grows one nanosecond per nanosecond: it is enough after `-left`.
            let wait = u64::try_from(-left).unwrap_or(u64::MAX);
            return Err(refused(credit, Some(wait)));
        }
        // A stale `now` keeps the later time, with the credit it implies then.
        let at = state.1.max(now);
        *state = (left + i128::from(at - now), at);
        Ok(allowed(left))
    }

    /// Whole tokens available at `now`. Spends nothing.
    pub fn available_at(&self, now: Nanos) -> u32 {
        let credit = refill(*self.lock(), now.as_u64(), i128::from(self.depth)).max(0);
        (credit / i128::from(self.interval)) as u32
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (i128, u64)> {
        // A panic while holding the lock cannot leave the numbers inconsistent (they are
        // written together), so a poisoned lock is still a valid bucket.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The credit at `now` of `(credit, at)`: plus the time elapsed since `at` (negative for a
/// stale `now`), capped at the depth.
fn refill((credit, at): (i128, u64), now: u64, depth: i128) -> i128 {
    (credit + i128::from(now) - i128::from(at)).min(depth)
}
