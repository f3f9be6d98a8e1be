//! The figures the headers carry, from a decision: how a GCRA quota and a bucket's level map to
//! the `q`, `w`, `r` and `t` of the RateLimit fields, always in whole seconds rounded up.

use cellrate::{Allowed, Denied, Quota};
use core::time::Duration;

/// The most policies one layer enforces together.
pub(crate) const MAX_POLICIES: usize = 4;

/// What the layer tells of one policy after a decision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PolicyState {
    /// Whole tokens left (`r`).
    pub(crate) remaining: u32,
    /// Seconds until the bucket holds more than now, rounded up; 0 when full (`t`). Kept in
    /// 32 bits (136 years, saturating) to keep the per-request state small.
    pub(crate) next_token_secs: u32,
    /// Seconds until the bucket is full, rounded up (the legacy `X-RateLimit-Reset`).
    pub(crate) full_secs: u32,
    /// A keyed hash of the partition key (`pk`), when asked for.
    pub(crate) partition: Option<u64>,
}

impl PolicyState {
    /// The state of a bucket under `quota` that answered `remaining` and `reset_after`.
    ///
    /// With a deficit `d = reset_after` and depth `D = burst * T`, the bucket holds
    /// `(D - d) / T` tokens and gains its next whole one when the deficit falls to
    /// `D - (remaining + 1) * T`, that is `d - D + (remaining + 1) * T` from now: in `(0, T]`
    /// unless the bucket is full.
    pub(crate) fn of(quota: &Quota, remaining: u32, reset_after: Duration) -> PolicyState {
        let deficit = duration_ns(reset_after);
        let interval = duration_ns(quota.emission_interval());
        let depth = interval.saturating_mul(u64::from(quota.burst()));
        let next_token = if deficit == 0 {
            0
        } else {
            let after_next = interval.saturating_mul(u64::from(remaining) + 1);
            deficit
                .saturating_add(after_next)
                .saturating_sub(depth)
                .clamp(1, deficit)
        };
        PolicyState {
            remaining,
            next_token_secs: secs_u32(ceil_secs(next_token)),
            full_secs: secs_u32(ceil_secs(deficit)),
            partition: None,
        }
    }

    /// [`PolicyState::of`] from an answer.
    pub(crate) fn of_answer(quota: &Quota, answer: &Result<Allowed, Denied>) -> PolicyState {
        match answer {
            Ok(a) => PolicyState::of(quota, a.remaining(), a.reset_after()),
            Err(d) => PolicyState::of(quota, d.remaining(), d.reset_after()),
        }
    }
}

/// The `q` and `w` of a quota in `RateLimit-Policy`: `q` is the burst and `w` the time an
/// empty bucket takes to fill, in whole seconds rounded up (at least 1). A client that spends
/// `q` units per `w` seconds is never refused, since each window refills at least `q` tokens;
/// the long-run rate `q / w` never exceeds the quota's.
pub(crate) fn quota_window(quota: &Quota) -> (u32, u64) {
    let interval = duration_ns(quota.emission_interval());
    let depth = interval.saturating_mul(u64::from(quota.burst()));
    (quota.burst(), ceil_secs(depth).max(1))
}

/// `d` in whole seconds, rounded up: never earlier than the real time.
pub(crate) fn ceil_secs_of(d: Duration) -> u64 {
    ceil_secs(duration_ns(d))
}

/// `d` in whole milliseconds, rounded up.
pub(crate) fn ceil_millis_of(d: Duration) -> u64 {
    duration_ns(d).div_ceil(1_000_000)
}

fn secs_u32(secs: u64) -> u32 {
    u32::try_from(secs).unwrap_or(u32::MAX)
}

fn ceil_secs(ns: u64) -> u64 {
    ns.div_ceil(1_000_000_000)
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cellrate::{Limiter, ManualClock};

    #[test]
    fn next_token_is_the_time_until_available_grows() {
        // 2 per second, burst 4: T = 500 ms.
        let clock = ManualClock::new();
        let quota = Quota::per_second(2).with_burst(4);
        let limiter = Limiter::with_clock(quota, clock.clone());
        for step in 0..40u64 {
            let answer = limiter.check();
            let state = PolicyState::of_answer(&quota, &answer);
            let before = limiter.available();
            // Walk in 10 ms steps until a token arrives; it must not come after `t` seconds.
            let mut waited = 0;
            while limiter.available() == before && before < 4 {
                clock.advance(Duration::from_millis(10));
                waited += 10;
            }
            if before < 4 {
                assert!(
                    waited <= u64::from(state.next_token_secs) * 1000,
                    "step {step}"
                );
                assert!(state.next_token_secs >= 1);
            } else {
                assert_eq!(state.next_token_secs, 0);
            }
            clock.advance(Duration::from_millis(130 * (step % 3)));
        }
    }

    #[test]
    fn window_is_the_fill_time_rounded_up() {
        assert_eq!(quota_window(&Quota::per_second(10)), (10, 1));
        assert_eq!(quota_window(&Quota::per_second(100).with_burst(5)), (5, 1));
        assert_eq!(quota_window(&Quota::per_minute(30).with_burst(3)), (3, 6));
        assert_eq!(quota_window(&Quota::per_second(3)), (3, 2)); // 3 x 333,333,334 ns
        assert_eq!(ceil_secs_of(Duration::from_millis(1001)), 2);
        assert_eq!(ceil_millis_of(Duration::from_nanos(1)), 1);
    }
}
