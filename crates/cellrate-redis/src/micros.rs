//! The quantities of the scripts, in whole microseconds: quotas, times, receipts, and the
//! arguments of a one-key call.

use super::error::Error;
use cellrate::Nanos;
use cellrate::Quota;
use cellrate::{Allowed, Denied};

/// Largest bucket depth in microseconds: 2^51 µs, about 71 years.
pub(crate) const MAX_DEPTH_US: u64 = 1 << 51;
/// Largest time in microseconds since the Unix epoch: 2^52 - 1 µs, about the year 2112. A TAT
/// written from it rounded up, plus a depth of at most 2^51, is at most [`MAX_TAT_US`].
pub(crate) const MAX_NOW_US: u64 = (1 << 52) - 1;
/// Largest TAT the scripts write and accept: 2^52 + 2^51 µs (6755399441055744, the bound
/// `lua_read_tat` checks). The largest written is a time rounded up plus a depth.
pub(crate) const MAX_TAT_US: u64 = (1 << 52) + (1 << 51);
const _: () = assert!(MAX_NOW_US + 1 + MAX_DEPTH_US == MAX_TAT_US);

/// A quota in whole microseconds, as the scripts see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MicroQuota {
    pub(crate) interval_us: u64,
    pub(crate) burst: u32,
}

impl MicroQuota {
    /// The quota with its emission interval rounded up to whole microseconds (so the long-run
    /// rate never exceeds the one configured), or an error if its depth passes 2^51 µs.
    pub(crate) fn new(quota: &Quota) -> Result<MicroQuota, Error> {
        let interval_ns = u64::try_from(quota.emission_interval().as_nanos()).unwrap_or(u64::MAX);
        let interval_us = interval_ns.div_ceil(1000);
        let depth_us = interval_us.checked_mul(u64::from(quota.burst()));
        match depth_us {
            Some(d) if d <= MAX_DEPTH_US => Ok(MicroQuota {
                interval_us,
                burst: quota.burst(),
            }),
            _ => Err(Error::QuotaTooLarge(*quota)),
        }
    }

    /// The quota the decisions follow, in nanoseconds (a whole number of microseconds).
    pub(crate) fn effective(&self) -> Quota {
        let interval = core::time::Duration::from_micros(self.interval_us);
        Quota::try_new(interval, self.burst).expect("depth checked at most 2^51 us")
    }

    /// The level of a bucket `reset_after_us` from full, in the core's nanoseconds.
    pub(crate) fn level(&self, reset_after_us: u64) -> Level {
        Level {
            reset_after_ns: reset_after_us * 1000,
            depth_ns: self.interval_us * u64::from(self.burst) * 1000,
            interval_ns: self.interval_us * 1000,
        }
    }
}

/// What a spend left behind, to give its tokens back later: the key's TAT just after it and
/// the key's credit given back (G) at that moment, both in the script's microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Receipt {
    pub(crate) after: u64,
    pub(crate) g0: u64,
}

/// A caller's time in whole microseconds since the Unix epoch: rounded down, and whether a
/// fraction of a microsecond was dropped. The scripts decide at the time rounded down and
/// write a TAT that starts from it rounded up, which can only deny, never grant, compared to
/// the exact nanosecond time (docs/design.md, section 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MicroTime {
    pub(crate) floor_us: u64,
    pub(crate) fraction: bool,
}

/// `now` (ns since the Unix epoch) as a [`MicroTime`]. Times past [`MAX_NOW_US`] (the year
/// 2112) are refused.
pub(crate) fn micros_since_epoch(now: Nanos) -> Result<MicroTime, Error> {
    let us = now.as_u64() / 1000;
    if us > MAX_NOW_US {
        return Err(Error::TimeOutOfRange(now));
    }
    Ok(MicroTime {
        floor_us: us,
        fraction: !now.as_u64().is_multiple_of(1000),
    })
}

/// The arguments after the key: interval, burst, cost (or n), now (-1 for the server's TIME),
/// start empty (1/0), keep ms, and 1 if the time had a fraction of a microsecond.
pub(crate) fn args(
    quota: &MicroQuota,
    n: u32,
    now: Option<MicroTime>,
    start_empty: bool,
    keep_ms: u64,
) -> [i64; 7] {
    // All of these are below 2^53 (checked by MicroQuota::new, micros_since_epoch and
    // RedisOptions::keep_ms), so the casts are exact.
    [
        quota.interval_us as i64,
        i64::from(quota.burst),
        i64::from(n),
        now.map_or(-1, |t| t.floor_us as i64),
        i64::from(start_empty),
        keep_ms as i64,
        i64::from(now.is_some_and(|t| t.fraction)),
    ]
}

/// A bucket's figures after a decision, in nanoseconds: what the core's answers are made of.
#[derive(Clone, Copy)]
pub(crate) struct Level {
    /// Time until the bucket is full again.
    pub(crate) reset_after_ns: u64,
    /// The bucket depth, `burst * emission_interval`.
    pub(crate) depth_ns: u64,
    /// The emission interval.
    pub(crate) interval_ns: u64,
}

impl Level {
    /// The answer of an admitted request that left the bucket at this level.
    pub(crate) fn allowed(self) -> Allowed {
        Allowed::from_figures(self.reset_after_ns, self.depth_ns, self.interval_ns)
    }

    /// The answer of a refused request, which passes after `retry_after_ns` (`None`: never).
    pub(crate) fn denied(self, retry_after_ns: Option<u64>) -> Denied {
        Denied::from_figures(
            self.reset_after_ns,
            self.depth_ns,
            self.interval_ns,
            retry_after_ns,
        )
    }
}
