//! The five figures of a `CL.THROTTLE` reply, from a decision, with redis-cell's rounding.
//!
//! - `remaining`: redis-cell divides the time left in the bucket by the emission interval,
//!   both truncated to whole microseconds, in floating point, truncated; 0 once the bucket is
//!   past empty (redis-cell can say -1 there, for a bucket left deeper than its new depth by a
//!   change of parameters). Where its interval is under a microsecond it divides by zero; the
//!   exact count of whole tokens is given there instead.
//! - `retry_after` and `reset_after`: whole seconds, plus one if the rest has a whole
//!   millisecond or more (a rest under a millisecond is dropped, as redis-cell drops it);
//!   `retry_after` is -1 when the call was allowed or can never pass (a quantity above the
//!   limit).

use super::Rate;
use cellrate::{Allowed, Denied};

/// A decision in nanoseconds: what the reply is made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    pub limited: bool,
    /// The time until the bucket is full: after the spend if allowed, as it stands if not.
    pub reset_after_ns: u64,
    /// When limited, the time until the same call would pass (`None`: never).
    pub retry_after_ns: Option<u64>,
}

impl Decision {
    /// A limiter's answer.
    pub fn of(answer: Result<Allowed, Denied>) -> Decision {
        match answer {
            Ok(allowed) => Decision {
                limited: false,
                reset_after_ns: super::duration_ns(allowed.reset_after()),
                retry_after_ns: None,
            },
            Err(denied) => Decision {
                limited: true,
                reset_after_ns: super::duration_ns(denied.reset_after()),
                retry_after_ns: denied.retry_after().map(super::duration_ns),
            },
        }
    }
}

/// A reply: `[limited, limit, remaining, retry_after, reset_after]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reply {
    pub limited: bool,
    pub limit: i64,
    pub remaining: i64,
    pub retry_after: i64,
    pub reset_after: i64,
}

impl Reply {
    /// The reply to `decision` under `rate`.
    pub fn new(rate: &Rate, decision: Decision) -> Reply {
        Reply {
            limited: decision.limited,
            limit: rate.limit(),
            remaining: remaining(rate, decision.reset_after_ns),
            retry_after: match (decision.limited, decision.retry_after_ns) {
                (true, Some(ns)) => seconds(ns),
                _ => -1,
            },
            reset_after: seconds(decision.reset_after_ns),
        }
    }

    /// The reply to a new key refused for lack of room in the table (`--overflow deny`):
    /// limited, nothing to spend now, a place free in `wait_ns`.
    pub fn no_room(rate: &Rate, wait_ns: u64) -> Reply {
        Reply {
            limited: true,
            limit: rate.limit(),
            remaining: 0,
            retry_after: seconds(wait_ns),
            reset_after: seconds(wait_ns),
        }
    }

    /// The five integers, in redis-cell's order.
    pub fn figures(&self) -> [i64; 5] {
        [
            i64::from(self.limited),
            self.limit,
            self.remaining,
            self.retry_after,
            self.reset_after,
        ]
    }
}

/// redis-cell's `remaining` for a bucket `reset_after_ns` from full.
fn remaining(rate: &Rate, reset_after_ns: u64) -> i64 {
    let interval = i128::from(rate.interval_ns());
    let next = i128::from(rate.depth_ns()) - i128::from(reset_after_ns);
    if next <= 0 {
        return 0;
    }
    let interval_us = interval / 1_000;
    if interval_us == 0 {
        return i64::try_from(next / interval).unwrap_or(0);
    }
    // Both below 2^63: the depth is at most 2^62 ns.
    ((next / 1_000) as f64 / interval_us as f64) as i64
}

/// Whole seconds, plus one for a rest of a millisecond or more.
fn seconds(ns: u64) -> i64 {
    let whole = ns / 1_000_000_000;
    let up = u64::from((ns % 1_000_000_000) / 1_000_000 > 0);
    i64::try_from(whole + up).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding() {
        assert_eq!(seconds(0), 0);
        assert_eq!(seconds(999_999), 0);
        assert_eq!(seconds(1_000_000), 1);
        assert_eq!(seconds(2_000_000_000), 2);
        assert_eq!(seconds(2_000_999_999), 2);
        assert_eq!(seconds(2_001_000_000), 3);
    }

    #[test]
    fn remaining_truncates_to_microseconds_as_redis_cell_does() {
        // 60 s / 7: an interval of 8,571,428,571 ns, 8,571,428 whole µs. Two intervals less a
        // nanosecond: one whole token in nanoseconds, two in redis-cell's microseconds.
        let rate = Rate::new(2, 7, 60).unwrap();
        let depth = rate.depth_ns();
        let reset = depth - (2 * rate.interval_ns() - 1);
        assert_eq!(remaining(&rate, reset), 2);
        // Past empty by less than an interval: 0, never negative.
        assert_eq!(remaining(&rate, depth + rate.interval_ns() - 1), 0);
        // Sub-microsecond intervals: the exact count.
        let fast = Rate::new(9, 10_000_000, 1).unwrap();
        assert_eq!(fast.interval_ns(), 100);
        assert_eq!(remaining(&fast, 250), 7);
    }
}
