//! `MutexBucket`: the plain token bucket, behind a mutex. The oracle and baseline.
//!
//! This is the textbook bucket (a level and the time it was last updated, refilled lazily from
//! the elapsed time, under a lock) in exact fixed point: the level is kept in nanoseconds of
//! credit, one token being one emission interval, so that no rounding can ever differ from the
//! GCRA limiter. It exists for two reasons:
//! - it is the **oracle** of the tests, which run it beside [`Limiter`](crate::Limiter) on random
//!   schedules and require the same decision, `remaining`, `retry_after` and `reset_after` at
//!   every step;
//! - it is the **baseline** of the benchmarks: the design a lock-free GCRA bucket replaces.
//!
//! It is not meant for production use: every check takes a lock.
//!
//! A stale `now` (earlier than the last update) is answered as of that instant: the level then
//! was lower by the refill between `now` and the last update, so a stale reading can only be
//! denied more, never granted more. This is what GCRA's `max(TAT, now)` does implicitly.
//!
//! Like a [`Limiter`](crate::Limiter), it can change its quota ([`MutexBucket::set_quota_at`]),
//! by the same [`QuotaChange`] rules, and its full-again time stops one nanosecond short of the
//! end of the clock, where the limiter keeps its marker of a moved bucket.

use crate::clock::{Clock, MonotonicClock};
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied, Level};
use crate::quota::Quota;
use crate::quota_change::QuotaChange;
use std::sync::Mutex;

/// A token bucket behind a `std::sync::Mutex`, with the same inputs and outcomes as
/// [`Limiter`](crate::Limiter). See the [module docs](self).
///
/// ```
/// use cellrate::baseline::MutexBucket;
/// use cellrate::{Nanos, Quota};
///
/// let bucket = MutexBucket::new(Quota::per_second(2).with_burst(6));
/// assert_eq!(bucket.check_n_at(6, Nanos::ZERO).unwrap().remaining(), 0);
/// assert!(bucket.check_n_at(1, Nanos::ZERO).is_err());
/// ```
#[derive(Debug)]
pub struct MutexBucket<C: Clock = MonotonicClock> {
    state: Mutex<State>,
    clock: C,
}

/// The bucket's level (credit in ns, at most the depth; negative only transiently) at `at`,
/// under `quota`.
#[derive(Debug, Clone, Copy)]
struct State {
    credit_ns: i128,
    at: u64,
    quota: Quota,
}

/// The last instant a full-again time may be: the end of the clock is the limiter's marker.
const LAST_FULL: u64 = u64::MAX - 1;

impl MutexBucket<MonotonicClock> {
    /// A full bucket on a new [`MonotonicClock`].
    pub fn new(quota: Quota) -> MutexBucket<MonotonicClock> {
        MutexBucket::with_clock(quota, MonotonicClock::new())
    }
}

impl<C: Clock> MutexBucket<C> {
    /// A full bucket reading time from `clock`.
    pub fn with_clock(quota: Quota, clock: C) -> MutexBucket<C> {
        let full = State {
            credit_ns: i128::from(quota.depth_ns()),
            at: 0,
            quota,
        };
        MutexBucket {
            state: Mutex::new(full),
            clock,
        }
    }

    /// The same bucket, but empty now.
    pub fn start_empty(self) -> MutexBucket<C> {
        let now = self.clock.now();
        self.start_empty_at(now)
    }

    /// [`MutexBucket::start_empty`] with the time passed in. Within one bucket depth of
    /// [`Nanos::MAX`] the full-again time stops one nanosecond short of it, as the GCRA TAT
    /// does.
    pub fn start_empty_at(self, now: Nanos) -> MutexBucket<C> {
        let quota = self.quota();
        let full_in = quota.depth_ns().min(LAST_FULL.saturating_sub(now.as_u64()));
        *self.lock() = State {
            credit_ns: i128::from(quota.depth_ns() - full_in),
            at: now.as_u64(),
            quota,
        };
        self
    }

    /// Spends one token now if there is one.
    pub fn check(&self) -> Result<Allowed, Denied> {
        self.check_n(1)
    }

    /// Spends `cost` tokens now if all of them are there.
    pub fn check_n(&self, cost: u32) -> Result<Allowed, Denied> {
        self.check_n_at(cost, self.clock.now())
    }

    /// Spends `cost` tokens at `now` if all of them are there; the same rules as
    /// [`Limiter::check_n_at`](crate::Limiter::check_n_at).
    pub fn check_n_at(&self, cost: u32, now: Nanos) -> Result<Allowed, Denied> {
        let now = now.as_u64();
        let mut state = self.lock();
        let quota = state.quota;
        let credit = refill(&state, now);
        let depth = i128::from(quota.depth_ns());
        let interval = i128::from(quota.emission_interval_ns());
        let cost_ns = i128::from(cost) * interval;
        if cost == 0 {
            return Ok(Allowed::new(level(credit, &quota)));
        }
        if cost > quota.burst() {
            return Err(Denied::new(level(credit, &quota), None));
        }
        // How far ahead of `now` the bucket's full-again time would be after the spend; like
        // the GCRA TAT, that time must be representable, or the request can never pass.
        let need = depth - credit + cost_ns;
        if i128::from(now) + need > i128::from(LAST_FULL) {
            let unusable = Level::unusable(level(credit, &quota).reset_after_ns, interval as u64);
            return Err(Denied::new(unusable, None));
        }
        if credit < cost_ns {
            return Err(Denied::new(
                level(credit, &quota),
                Some((cost_ns - credit) as u64),
            ));
        }
        let after = credit - cost_ns;
        *state = State {
            credit_ns: after,
            at: now,
            quota,
        };
        Ok(Allowed::new(level(after, &quota)))
    }

    /// Whole tokens available now. Spends nothing.
    pub fn available(&self) -> u32 {
        self.available_at(self.clock.now())
    }

    /// Whole tokens available at `now`. Spends nothing.
    pub fn available_at(&self, now: Nanos) -> u32 {
        let state = self.lock();
        Allowed::new(level(refill(&state, now.as_u64()), &state.quota)).remaining()
    }

    /// Gives back `n` tokens, never beyond the capacity.
    pub fn refund_n(&self, n: u32) {
        self.refund_n_at(n, self.clock.now())
    }

    /// Gives back `n` tokens at `now`, never beyond the capacity.
    pub fn refund_n_at(&self, n: u32, now: Nanos) {
        let now = now.as_u64();
        let mut state = self.lock();
        let quota = state.quota;
        let credit = refill(&state, now);
        let depth = i128::from(quota.depth_ns());
        if n == 0 || credit >= depth {
            return;
        }
        // More than a full bucket cannot be given back (as for the GCRA refund).
        let give = i128::from(n.min(quota.burst())) * i128::from(quota.emission_interval_ns());
        *state = State {
            credit_ns: (credit + give).min(depth),
            at: now,
            quota,
        };
    }

    /// Changes the quota at `now`, carrying the bucket over by the rule `how`: the same change
    /// as [`Limiter::set_quota_at`](crate::Limiter::set_quota_at), under the lock. The rule is
    /// applied to the full-again time the level stands for, `at + depth - credit`.
    pub fn set_quota_at(&self, quota: Quota, how: QuotaChange, now: Nanos) {
        let mut state = self.lock();
        let old = state.quota;
        let full_again = i128::from(state.at) + i128::from(old.depth_ns()) - state.credit_ns;
        let full_again = u64::try_from(full_again.max(0)).unwrap_or(u64::MAX);
        let moved = how
            .rebase(full_again, now.as_u64(), &old, &quota)
            .min(LAST_FULL);
        *state = State {
            credit_ns: i128::from(quota.depth_ns()) - (i128::from(moved) - i128::from(state.at)),
            at: state.at,
            quota,
        };
    }

    /// The quota this bucket enforces.
    pub fn quota(&self) -> Quota {
        self.lock().quota
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the numbers inconsistent (they are
        // written together), so a poisoned lock is still a valid bucket.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The credit at `now`: the stored credit plus the time elapsed since it was stored
/// (negative elapsed for a stale `now`), capped at the depth.
fn refill(state: &State, now: u64) -> i128 {
    let elapsed = i128::from(now) - i128::from(state.at);
    (state.credit_ns + elapsed).min(i128::from(state.quota.depth_ns()))
}

fn level(credit: i128, quota: &Quota) -> Level {
    let depth = i128::from(quota.depth_ns());
    let reset_after = (depth - credit).clamp(0, i128::from(u64::MAX)) as u64;
    Level {
        reset_after_ns: reset_after,
        depth_ns: quota.depth_ns(),
        interval_ns: quota.emission_interval_ns(),
    }
}
