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
//! Like a [`Limiter`](crate::Limiter), it can book tokens ahead and give bookings back
//! ([`MutexBucket::reserve_n_at`], [`MutexBooking`]) by the one rule of every give-back
//! (docs/design.md, section 5), which it applies from its exact history: a booking gives back
//! at most what it still holds, `min(k * T, top - now)` where `top` is the full-again time its
//! spend left less the credit given back since (unless it is on top of the bucket). It can
//! change its quota ([`MutexBucket::set_quota_at`]) by the same [`QuotaChange`] rules, after
//! which earlier bookings give nothing back. Its full-again time stops one nanosecond short of
//! the end of the clock, where the limiter keeps its marker of a moved bucket.

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

/// The bucket's level (credit in ns, at most the depth; negative in debt) at `at`, under
/// `quota`, with the credit given back so far and the tenure of the quota.
#[derive(Debug, Clone, Copy)]
struct State {
    credit_ns: i128,
    at: u64,
    quota: Quota,
    /// Credit given back so far by give-backs that were not on top of the bucket.
    given: u64,
    /// One more at each quota change: bookings of an earlier tenure give nothing back.
    tenure: u64,
}

/// Tokens booked on a [`MutexBucket`]: what its give-backs need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MutexBooking {
    ready_at: u64,
    allowed: Allowed,
    /// The full-again times before the booking and after it.
    before: u64,
    after: u64,
    /// The bucket's `given` at the booking.
    given: u64,
    tenure: u64,
    cost: u32,
    quota: Quota,
}

impl MutexBooking {
    /// When the booked tokens are there.
    pub fn ready_at(&self) -> Nanos {
        Nanos::new(self.ready_at)
    }

    /// The bucket just after the booking.
    pub fn allowed(&self) -> Allowed {
        self.allowed
    }
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
            given: 0,
            tenure: 0,
        };
        MutexBucket {
            state: Mutex::new(full),
            clock,
        }
    }

    /// With `on`, the same bucket but empty now; with `false`, the bucket as it is.
    pub fn start_empty(self, on: bool) -> MutexBucket<C> {
        let now = self.clock.now();
        self.start_empty_at(on, now)
    }

    /// [`MutexBucket::start_empty`] with the time passed in. Within one bucket depth of
    /// [`Nanos::MAX`] the full-again time stops one nanosecond short of it, as the GCRA TAT
    /// does.
    pub fn start_empty_at(self, on: bool, now: Nanos) -> MutexBucket<C> {
        if !on {
            return self;
        }
        let quota = self.quota();
        let full_in = quota.depth_ns().min(LAST_FULL.saturating_sub(now.as_u64()));
        let mut state = self.lock();
        state.credit_ns = i128::from(quota.depth_ns() - full_in);
        state.at = now.as_u64();
        drop(state);
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
        self.reserve_n_at(cost, 0, now)
            .map(|booking| booking.allowed)
    }

    /// Books `cost` tokens at `now`, ready within `max_wait_ns`; the same rules as
    /// [`Limiter::reserve_n_at`](crate::Limiter::reserve_n_at).
    pub fn reserve_n_at(
        &self,
        cost: u32,
        max_wait_ns: u64,
        now: Nanos,
    ) -> Result<MutexBooking, Denied> {
        let now = now.as_u64();
        let mut state = self.lock();
        let quota = state.quota;
        let credit = refill(&state, now);
        let depth = i128::from(quota.depth_ns());
        let interval = i128::from(quota.emission_interval_ns());
        let cost_ns = i128::from(cost) * interval;
        let before = state.at as i128 + depth - state.credit_ns;
        let before = u64::try_from(before.max(0)).unwrap_or(u64::MAX);
        let booking = |after: i128, ready_at: u64, state: &State| MutexBooking {
            ready_at,
            allowed: Allowed::new(level(after, &quota)),
            before,
            after: full_again(after, now, &quota),
            given: state.given,
            tenure: state.tenure,
            cost,
            quota,
        };
        if cost == 0 {
            return Ok(booking(credit, now, &state));
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
        // A reservation waits at most the limiter's bound (`gcra::max_wait_ns`).
        let max_wait =
            i128::from(max_wait_ns.min(crate::engine::gcra::MAX_AHEAD - quota.depth_ns()));
        if credit + max_wait < cost_ns {
            return Err(Denied::new(
                level(credit, &quota),
                Some((cost_ns - credit) as u64),
            ));
        }
        let after = credit - cost_ns;
        let ready_at = now + (-after).max(0) as u64;
        state.credit_ns = after;
        state.at = now;
        Ok(booking(after, ready_at, &state))
    }

    /// Gives the tokens of `booking` back at `now`, as far as it still holds them; the same
    /// rules as [`Reservation::cancel_at`](crate::Reservation::cancel_at).
    pub fn cancel_at(&self, booking: &MutexBooking, now: Nanos) {
        self.give_back_at(booking, booking.cost, now)
    }

    /// Settles `booking` at its actual cost at `now`; the same rules as
    /// [`Reservation::settle_at`](crate::Reservation::settle_at).
    pub fn settle_at(&self, booking: &MutexBooking, actual: u32, now: Nanos) {
        if actual < booking.cost && now.as_u64() >= booking.ready_at {
            self.give_back_at(booking, booking.cost - actual, now);
        } else if actual > booking.cost {
            self.force_at(actual - booking.cost, now);
        }
    }

    /// Gives back `tokens` of `booking` at `now` by the rule of every give-back.
    fn give_back_at(&self, booking: &MutexBooking, tokens: u32, now: Nanos) {
        let now = now.as_u64();
        let mut state = self.lock();
        if state.tenure != booking.tenure {
            return; // the quota changed since: nothing comes back
        }
        let quota = booking.quota;
        let depth = i128::from(quota.depth_ns());
        // The full-again time as stored: below `now` for a bucket restored to before a booking.
        let stored = i128::from(state.at) + depth - state.credit_ns;
        let stored = u64::try_from(stored.max(0)).unwrap_or(u64::MAX);
        if state.given == booking.given && stored == booking.after {
            // Nothing given back since, and the bucket as the booking left it: back exactly.
            let new = if tokens >= booking.cost {
                booking.before
            } else {
                booking.after - u64::from(tokens) * quota.emission_interval_ns()
            };
            state.credit_ns = depth - (i128::from(new) - i128::from(state.at));
            return;
        }
        let full = full_again(refill(&state, now), now, &quota);
        if full <= now {
            return;
        }
        let top = booking.after.saturating_sub(state.given - booking.given);
        if full != top && full - now > quota.depth_ns() {
            return; // a booking above it may be waiting for its tokens
        }
        let held = top.saturating_sub(now);
        let give = (u64::from(tokens) * quota.emission_interval_ns()).min(held);
        if give == 0 {
            return;
        }
        let new = full.saturating_sub(give).max(now);
        if full != top {
            state.given += full - new;
        }
        state.credit_ns = i128::from(quota.depth_ns()) - i128::from(new - now);
        state.at = now;
    }

    /// Spends `tokens` more unconditionally at `now`, under the bucket's quota now; the same
    /// rule as a settled reservation's extra cost.
    fn force_at(&self, tokens: u32, now: Nanos) {
        let now = now.as_u64();
        let mut state = self.lock();
        let quota = state.quota;
        let full = full_again(refill(&state, now), now, &quota);
        let forced = crate::engine::gcra::force(full, now, tokens, &quota).min(LAST_FULL);
        state.credit_ns = i128::from(quota.depth_ns()) - (i128::from(forced) - i128::from(now));
        state.at = now;
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
        state.credit_ns = i128::from(quota.depth_ns()) - (i128::from(moved) - i128::from(state.at));
        state.quota = quota;
        state.tenure += 1;
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

/// The full-again time of a bucket with `credit` at `now` (at least `now`: a full bucket).
fn full_again(credit: i128, now: u64, quota: &Quota) -> u64 {
    let ahead = (i128::from(quota.depth_ns()) - credit).max(0);
    u64::try_from(i128::from(now) + ahead).unwrap_or(u64::MAX)
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
