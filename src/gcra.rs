//! The decision itself: pure integer arithmetic on one theoretical arrival time (TAT).
//!
//! A bucket is full when `TAT <= now`. Spending `c` tokens at `now` moves the TAT to
//! `max(TAT, now) + c * T`, and is allowed iff that lands at most one bucket depth `D = b * T`
//! ahead of `now`. This is a token bucket whose level is `D - (TAT - now)` nanoseconds of credit;
//! [`MutexBucket`](crate::baseline::MutexBucket) keeps that credit explicitly and decides the same
//! at every step. Every sum and product is checked: an overflow is a denial, never a wrap.

use crate::outcome::{Allowed, Denied, Level};
use crate::quota::Quota;

/// The outcome of spending `cost` tokens at `now` from a bucket at `tat`: on `Ok`, the TAT to
/// store (equal to `tat` for a peek, which stores nothing) and the answer.
#[inline(always)]
pub(crate) fn spend(tat: u64, now: u64, cost: u32, quota: &Quota) -> Result<(u64, Allowed), Denied> {
    // How far the bucket is from full; `max(TAT, now) - now`. A stale `now` (earlier than one
    // already used) makes this larger, never smaller: a stale clock never grants tokens.
    let ahead = tat.saturating_sub(now);
    if cost == 0 {
        return Ok((tat, Allowed::new(level(ahead, quota))));
    }
    if cost > quota.burst() {
        return Err(Denied::new(level(ahead, quota), None));
    }
    // cost <= burst, so cost * T <= D: no overflow.
    let cost_ns = u64::from(cost) * quota.emission_interval_ns();
    let depth = quota.depth_ns();
    match ahead.checked_add(cost_ns) {
        Some(need) if need <= depth => match now.checked_add(need) {
            Some(new_tat) => Ok((new_tat, Allowed::new(level(need, quota)))),
            // The new TAT is past the end of the clock: it can never be stored.
            None => Err(Denied::new(level(ahead, quota), None)),
        },
        Some(need) => Err(Denied::new(level(ahead, quota), Some(need - depth))),
        // `ahead` is near u64::MAX (a stale `now` far behind the TAT): the wait saturates.
        None => Err(Denied::new(level(ahead, quota), Some(u64::MAX))),
    }
}

/// The TAT after giving back `n` tokens at `now`: `max(TAT - n * T, now)`, so the level never
/// rises above the capacity. `None` when nothing changes (the bucket is already full).
#[inline]
pub(crate) fn refund(tat: u64, now: u64, n: u32, quota: &Quota) -> Option<u64> {
    if tat <= now || n == 0 {
        return None;
    }
    // min(n, burst) * T <= D: no overflow, and more than a full bucket cannot be given back.
    let give_ns = u64::from(n.min(quota.burst())) * quota.emission_interval_ns();
    Some(tat.saturating_sub(give_ns).max(now))
}

/// Whole tokens available at `now`, spending nothing.
#[inline]
pub(crate) fn available(tat: u64, now: u64, quota: &Quota) -> u32 {
    Allowed::new(level(tat.saturating_sub(now), quota)).remaining()
}

/// The TAT of a bucket that is empty at `now` (full again one depth later), saturating.
#[inline]
pub(crate) fn empty_at(now: u64, quota: &Quota) -> u64 {
    now.saturating_add(quota.depth_ns())
}

#[inline(always)]
fn level(reset_after_ns: u64, quota: &Quota) -> Level {
    Level {
        reset_after_ns,
        depth_ns: quota.depth_ns(),
        interval_ns: quota.emission_interval_ns(),
    }
}
