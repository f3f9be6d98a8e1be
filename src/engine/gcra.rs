//! The decision itself: pure integer arithmetic on one theoretical arrival time (TAT). The
//! rules and why they are exact: docs/design.md §1.

use crate::outcome::{Allowed, Denied, Level};
use crate::quota::Quota;

/// The furthest ahead of its `now` that any write places a TAT: [`Quota::MAX_DEPTH`], 2^62 ns
/// (docs/design.md §1).
pub(crate) const MAX_AHEAD: u64 = crate::quota::MAX_DEPTH_NS;

/// A TAT more than this far ahead of `now` was written by no operation at or before `now`
/// (nor at any time up to [`MAX_AHEAD`] after it): twice [`MAX_AHEAD`], 2^63 ns.
#[cfg_attr(not(feature = "std"), allow(dead_code))] // only the keyed table needs it
pub(crate) const IMPOSSIBLE_AHEAD: u64 = 2 * MAX_AHEAD;

/// The longest wait a reservation of `quota` may book: `max_wait_ns`, but at most
/// [`MAX_AHEAD`] minus the depth, so that its TAT stays within [`MAX_AHEAD`] of `now`.
#[inline]
pub(crate) fn max_wait_ns(max_wait_ns: u64, quota: &Quota) -> u64 {
    // depth <= MAX_AHEAD: the quota's own bound.
    max_wait_ns.min(MAX_AHEAD - quota.depth_ns())
}

/// The refusal of a request whose TAT cannot be represented: it can never pass, so it reports
/// no tokens, and the time until the bucket is full (`ahead`).
#[cold]
fn unrepresentable(ahead: u64, quota: &Quota) -> Denied {
    Denied::new(Level::unusable(ahead, quota.emission_interval_ns()), None)
}

/// [`unrepresentable`], for the buckets that reserve their last TATs as markers (a keyed
/// table's two, a limiter's one).
#[inline]
pub(crate) fn unrepresentable_at(tat: u64, now: u64, quota: &Quota) -> Denied {
    unrepresentable(tat.saturating_sub(now), quota)
}

/// The outcome of spending `cost` tokens at `now` from a bucket at `tat`: on `Ok`, the TAT to
/// store (equal to `tat` for a peek, which stores nothing) and the answer. A spend is a
/// reservation that may not wait at all.
#[inline]
pub(crate) fn spend(
    tat: u64,
    now: u64,
    cost: u32,
    quota: &Quota,
) -> Result<(u64, Allowed), Denied> {
    reserve(tat, now, cost, 0, quota).map(|(new_tat, booking)| (new_tat, booking.allowed))
}

/// [`spend`] for a limiter's bucket, whose TAT may be the marker of a moved bucket
/// (`bucket::MOVED`, the last nanosecond): a spend from it is beyond the clock, and its refusal
/// is [`Denied::MOVED`], without figures, since the caller looks elsewhere instead.
#[inline]
pub(crate) fn spend_marked(
    tat: u64,
    now: u64,
    cost: u32,
    quota: &Quota,
) -> Result<(u64, Allowed), Denied> {
    reserve_as::<true>(tat, now, cost, 0, quota)
        .map(|(new_tat, booking)| (new_tat, booking.allowed))
}

/// The TAT after giving back `tokens` of a booking whose tokens end at `top`, by the rule of
/// docs/design.md §1 (*Give back*); `None` when nothing changes.
#[inline]
pub(crate) fn give_back(tat: u64, now: u64, top: u64, tokens: u32, quota: &Quota) -> Option<u64> {
    if tat <= now {
        return None; // full
    }
    if tat != top && tat - now > quota.depth_ns() {
        return None; // a booking above this one may be waiting
    }
    let held = top.saturating_sub(now);
    let credit = u64::from(tokens)
        .saturating_mul(quota.emission_interval_ns())
        .min(held);
    (credit > 0).then(|| tat.saturating_sub(credit).max(now))
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

/// The level of a bucket `reset_after_ns` from full under `quota`.
#[inline]
pub(crate) fn level(reset_after_ns: u64, quota: &Quota) -> Level {
    Level {
        reset_after_ns,
        depth_ns: quota.depth_ns(),
        interval_ns: quota.emission_interval_ns(),
    }
}

/// A booking: when the reserved tokens are ready, and the bucket right after booking them.
#[derive(Clone, Copy, Debug)]
pub struct Booking {
    pub(crate) ready_at: u64,
    pub(crate) allowed: Allowed,
}

/// The outcome of reserving `cost` tokens at `now`, waiting at most `max_wait_ns` for them
/// (docs/design.md §1, *Reserve*); refused as a check would be.
#[inline]
pub(crate) fn reserve(
    tat: u64,
    now: u64,
    cost: u32,
    max_wait_ns: u64,
    quota: &Quota,
) -> Result<(u64, Booking), Denied> {
    reserve_as::<false>(tat, now, cost, max_wait_ns, quota)
}

/// [`reserve`]; with `MARKED`, a TAT of `u64::MAX` (a moved limiter bucket) is refused with
/// [`Denied::MOVED`] where it turns out beyond the clock ([`spend_marked`]).
#[inline]
fn reserve_as<const MARKED: bool>(
    tat: u64,
    now: u64,
    cost: u32,
    max_wait_ns: u64,
    quota: &Quota,
) -> Result<(u64, Booking), Denied> {
    // How far the bucket is from full; `max(TAT, now) - now`. A stale `now` (earlier than one
    // already used) makes this larger, never smaller: a stale clock never grants tokens.
    let ahead = tat.saturating_sub(now);
    if cost == 0 {
        let allowed = Allowed::new(level(ahead, quota));
        return Ok((
            tat,
            Booking {
                ready_at: now,
                allowed,
            },
        ));
    }
    let refused = |retry_after_ns| Denied::new(level(ahead, quota), retry_after_ns);
    if cost > quota.burst() {
        return Err(refused(None));
    }
    // cost <= burst, so cost * T <= D: no overflow. The new TAT is `max(TAT, now) + cost_ns`,
    // not `now + need`: the store then waits on a chain two steps from the load, not four.
    let cost_ns = u64::from(cost) * quota.emission_interval_ns();
    let Some(new_tat) = tat.max(now).checked_add(cost_ns) else {
        if MARKED && tat == u64::MAX {
            return Err(Denied::MOVED);
        }
        return Err(unrepresentable(ahead, quota));
    };
    let need = new_tat - now; // `ahead + cost_ns`, at most `new_tat`
    let wait = need.saturating_sub(quota.depth_ns());
    if wait > max_wait_ns {
        return Err(refused(Some(wait)));
    }
    let booking = Booking {
        ready_at: now + wait, // wait <= need, and now + need did not overflow
        allowed: Allowed::new(level(need, quota)),
    };
    Ok((new_tat, booking))
}

/// The TAT after spending `n` more tokens unconditionally at `now`, into debt if need be, up
/// to [`MAX_AHEAD`] past `now` (docs/design.md §1, *Force*).
#[inline]
pub(crate) fn force(tat: u64, now: u64, n: u32, quota: &Quota) -> u64 {
    let extra = u64::from(n).saturating_mul(quota.emission_interval_ns());
    let horizon = now.saturating_add(MAX_AHEAD);
    tat.max(tat.max(now).saturating_add(extra).min(horizon))
}
