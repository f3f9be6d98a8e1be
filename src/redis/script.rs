//! The two server-side Lua scripts (decide, refund), their arguments and the decoding of their
//! replies into the crate's exact [`Allowed`]/[`Denied`].
//!
//! Lua numbers are doubles: integers are exact up to 2^53, which microseconds since 1970 are
//! (about 1.8e15) and nanoseconds are not. The scripts therefore work in whole microseconds and
//! use only `tonumber` on integer strings, `+`, `-`, `*` and comparisons, on values kept below
//! 2^53 by the bounds checked in [`MicroQuota`] and [`micros_since_epoch`]. The one division (the
//! key's expiry in milliseconds) is corrected with exact integer comparisons and never affects a
//! decision. Remaining tokens are worked out in Rust from the figures the script returns.

use super::error::Error;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied, Level};
use crate::quota::Quota;
use redis::{Script, Value};

/// Largest bucket depth in microseconds: 2^51 µs, about 71 years.
const MAX_DEPTH_US: u64 = 1 << 51;
/// Largest time in microseconds since the Unix epoch: 2^52 µs, about the year 2112. With a
/// depth of at most 2^51, every TAT and sum in the scripts stays below 2^53.
pub(crate) const MAX_NOW_US: u64 = 1 << 52;

/// The decision, the same steps as `gcra::spend`. KEYS[1]: the bucket. ARGV: interval µs,
/// burst, cost, now µs (-1: the server's TIME), start empty (1/0), keep ms (extra key
/// lifetime). Returns {1, reset_after µs} when allowed; {0, reset_after µs, retry_after µs or
/// -1 for never} when denied. Writes the new TAT only when allowed, expiring when the bucket is
/// full again (+ keep ms); the one other write is the first sight of a start-empty bucket,
/// which is remembered even when denied (otherwise it would never fill).
const DECIDE_LUA: &str = r#"
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local depth = burst * interval
local stored = redis.call('GET', KEYS[1])
local tat = now
if stored then
  tat = tonumber(stored)
  if not tat then return redis.error_reply('cellrate: key does not hold an integer TAT') end
elseif ARGV[5] == '1' then
  tat = now + depth
end
local ahead = 0
if tat > now then ahead = tat - now end
if cost == 0 then return {1, ahead} end
local need = ahead + cost * interval
local reply
if cost > burst then
  reply = {0, ahead, -1}
elseif need > depth then
  reply = {0, ahead, need - depth}
else
  reply = {1, need}
  tat = now + need
end
if reply[1] == 0 and (stored or ARGV[5] ~= '1') then return reply end
local until_full = tat - now
local ms = math.floor(until_full / 1000)
while ms * 1000 > until_full do ms = ms - 1 end
while ms * 1000 < until_full do ms = ms + 1 end
redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', ms + tonumber(ARGV[6]))
return reply
"#;

/// The refund. KEYS[1]: the bucket. ARGV: interval µs, burst, n, now µs (-1: TIME), start
/// empty (1/0), keep ms. Sets TAT = max(TAT - min(n, burst) * interval, now) if TAT > now.
/// Returns the new time to full in µs.
const REFUND_LUA: &str = r#"
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
local start_empty = ARGV[5] == '1'
local keep_ms = tonumber(ARGV[6])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local stored = redis.call('GET', KEYS[1])
local tat = now
if stored then
  tat = tonumber(stored)
  if not tat then return redis.error_reply('cellrate: key does not hold an integer TAT') end
elseif start_empty then
  tat = now + burst * interval
end
if tat <= now or n == 0 then return 0 end
if n > burst then n = burst end
local new = tat - n * interval
if new < now then new = now end
local ahead = new - now
local ms = math.floor(ahead / 1000)
while ms * 1000 > ahead do ms = ms - 1 end
while ms * 1000 < ahead do ms = ms + 1 end
ms = ms + keep_ms
if ms > 0 then
  redis.call('SET', KEYS[1], string.format('%d', new), 'PX', ms)
else
  redis.call('DEL', KEYS[1])
end
return ahead
"#;

/// The decision script (SHA1 computed once; EVALSHA with a NOSCRIPT reload).
pub(crate) fn decide_script() -> Script {
    Script::new(DECIDE_LUA)
}

/// The refund script.
pub(crate) fn refund_script() -> Script {
    Script::new(REFUND_LUA)
}

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
        let interval_us = quota.emission_interval_ns().div_ceil(1000);
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

/// `now` (ns since the Unix epoch) in whole microseconds, rounded down: a time on the
/// microsecond grid is unchanged, and rounding down can only deny, never grant, compared to
/// the exact nanosecond time. Times past 2^52 µs (the year 2112) are refused.
pub(crate) fn micros_since_epoch(now: Nanos) -> Result<u64, Error> {
    let us = now.as_u64() / 1000;
    if us > MAX_NOW_US {
        return Err(Error::TimeOutOfRange(now));
    }
    Ok(us)
}

/// The arguments after the key: interval, burst, cost (or n), now (-1 for the server's TIME),
/// start empty (1/0), keep ms.
pub(crate) fn args(
    quota: &MicroQuota,
    n: u32,
    now_us: Option<u64>,
    start_empty: bool,
    keep_ms: u64,
) -> [i64; 6] {
    // All of these are below 2^53 (checked by MicroQuota::new, micros_since_epoch and
    // RedisOptions::keep_ms), so the casts are exact.
    [
        quota.interval_us as i64,
        i64::from(quota.burst),
        i64::from(n),
        now_us.map_or(-1, |us| us as i64),
        i64::from(start_empty),
        keep_ms as i64,
    ]
}

/// The decision a reply of the decide script stands for.
pub(crate) fn decode_decision(
    reply: &Value,
    quota: &MicroQuota,
) -> Result<Result<Allowed, Denied>, Error> {
    let bad = || Error::UnexpectedReply(format!("{reply:?}"));
    let Value::Array(items) = reply else {
        return Err(bad());
    };
    let ints: Vec<i64> = items
        .iter()
        .map(|v| match v {
            Value::Int(i) => Ok(*i),
            _ => Err(bad()),
        })
        .collect::<Result<_, _>>()?;
    let nonneg = |i: i64| u64::try_from(i).map_err(|_| bad());
    match ints.as_slice() {
        [1, reset] => Ok(Ok(Allowed::new(quota.level(nonneg(*reset)?)))),
        [0, reset, -1] => Ok(Err(Denied::new(quota.level(nonneg(*reset)?), None))),
        [0, reset, retry] => Ok(Err(Denied::new(
            quota.level(nonneg(*reset)?),
            Some(nonneg(*retry)? * 1000),
        ))),
        _ => Err(bad()),
    }
}
