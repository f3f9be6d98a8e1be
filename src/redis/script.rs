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

/// Lua: `now` from ARGV[$arg] in µs, or the server's `TIME` when it is negative.
macro_rules! lua_now {
    ($arg:literal) => {
        concat!(
            "local now = tonumber(ARGV[",
            $arg,
            "])\n",
            "if now < 0 then\n",
            "  local t = redis.call('TIME')\n",
            "  now = t[1] * 1000000 + t[2]\n",
            "end\n"
        )
    };
}
pub(crate) use lua_now;

/// Lua: the arguments every one-key script starts with: `interval`, `burst`, `$n` (the cost or
/// the refund) and `now`.
macro_rules! lua_args {
    ($n:literal) => {
        concat!(
            "local interval = tonumber(ARGV[1])\n",
            "local burst = tonumber(ARGV[2])\n",
            "local ",
            $n,
            " = tonumber(ARGV[3])\n",
            lua_now!("4")
        )
    };
}

/// Lua: `stored` (the raw value, or false) and `tat` (its number, or false) of key `$key`.
/// Anything but a TAT the scripts write (a positive integer without sign, exponent or leading
/// zero, at most 2^52 + 2^51) ends the script: `{-2$at}` for a key of another type,
/// `{-1$at, value}` (64 bytes at most) for a string that is no TAT.
macro_rules! lua_read_tat {
    ($key:literal, $at:literal) => {
        concat!(
            "local stored = redis.pcall('GET', ",
            $key,
            ")\n",
            "local tat = false\n",
            "if stored then\n",
            "  if type(stored) ~= 'string' then return {-2",
            $at,
            "} end\n",
            "  tat = string.find(stored, '^[1-9]%d*$') and tonumber(stored)\n",
            "  if not tat or tat > 6755399441055744 then return {-1",
            $at,
            ", string.sub(stored, 1, 64)} end\n",
            "end\n"
        )
    };
}
pub(crate) use lua_read_tat;

/// Lua: `tat` of a key Redis does not hold: `now` (a full bucket), or `$fresh` for a bucket
/// that starts empty (ARGV[5] is 1).
macro_rules! lua_missing_tat {
    ($fresh:literal) => {
        concat!(
            "if not tat then\n",
            "  tat = now\n",
            "  if ARGV[5] == '1' then tat = ",
            $fresh,
            " end\n",
            "end\n"
        )
    };
}

/// Lua: `ms`, the whole milliseconds `$us` rounds up to (the division corrected exactly).
macro_rules! lua_ceil_ms {
    ($us:literal) => {
        concat!(
            "local ms = math.floor(",
            $us,
            " / 1000)\n",
            "while ms * 1000 > ",
            $us,
            " do ms = ms - 1 end\n",
            "while ms * 1000 < ",
            $us,
            " do ms = ms + 1 end\n"
        )
    };
}
pub(crate) use lua_ceil_ms;

/// The decision, the same steps as `gcra::spend`. KEYS[1]: the bucket. ARGV: interval µs,
/// burst, cost, now µs (-1: the server's TIME), start empty (1/0), keep ms (extra key
/// lifetime), and 1 when the caller's time had a fraction of a µs (0 otherwise). Returns
/// {1, reset_after µs} when allowed; {0, reset_after µs, retry_after µs or -1 for never} when
/// denied; {-1, value} or {-2} for a key that holds no TAT (see `lua_read_tat`). Writes the
/// new TAT only when allowed, expiring when the bucket is full again (+ keep ms); the one
/// other write is the first sight of a start-empty bucket, which is remembered even when
/// denied (otherwise it would never fill). The decision is made at `now` rounded down and a
/// TAT that starts from `now` is written from `now` rounded up, so the stored TAT is never
/// earlier than the exact one: rounding never grants.
const DECIDE_LUA: &str = concat!(
    lua_args!("cost"),
    "local depth = burst * interval\n",
    lua_read_tat!("KEYS[1]", ""),
    lua_missing_tat!("now + ARGV[7] + depth"),
    r#"local ahead = 0
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
  if ahead == 0 then tat = now + ARGV[7] + need else tat = now + need end
end
if reply[1] == 0 and (stored or ARGV[5] ~= '1') then return reply end
local until_full = tat - now
"#,
    lua_ceil_ms!("until_full"),
    "redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', ms + ARGV[6])\n",
    "return reply\n"
);

/// The refund. KEYS[1]: the bucket. ARGV as for the decision, with n for the cost. At `now`
/// rounded up, sets TAT = max(TAT - min(n, burst) * interval, now) if TAT > now. Returns the
/// new time to full in µs, or {-1, value} / {-2} for a key that holds no TAT.
const REFUND_LUA: &str = concat!(
    lua_args!("n"),
    "now = now + ARGV[7]\n",
    lua_read_tat!("KEYS[1]", ""),
    lua_missing_tat!("now + burst * interval"),
    r#"if tat <= now or n == 0 then return 0 end
if n > burst then n = burst end
local new = tat - n * interval
if new < now then new = now end
local ahead = new - now
"#,
    lua_ceil_ms!("ahead"),
    r#"ms = ms + ARGV[6]
if ms > 0 then
  redis.call('SET', KEYS[1], string.format('%d', new), 'PX', ms)
else
  redis.call('DEL', KEYS[1])
end
return ahead
"#
);

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

/// A caller's time in whole microseconds since the Unix epoch: rounded down, and whether a
/// fraction of a microsecond was dropped. The scripts decide at the time rounded down and
/// write a TAT that starts from it rounded up, which can only deny, never grant, compared to
/// the exact nanosecond time (docs/design.md, section 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MicroTime {
    pub(crate) floor_us: u64,
    pub(crate) fraction: bool,
}

/// `now` (ns since the Unix epoch) as a [`MicroTime`]. Times past 2^52 µs (the year 2112) are
/// refused.
pub(crate) fn micros_since_epoch(now: Nanos) -> Result<MicroTime, Error> {
    let us = now.as_u64() / 1000;
    if us > MAX_NOW_US {
        return Err(Error::TimeOutOfRange(now));
    }
    Ok(MicroTime {
        floor_us: us,
        fraction: now.as_u64() % 1000 != 0,
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

/// The error a script reply stands for when the key held no TAT: `{-2}` (another type) or
/// `{-1, value}`; `rest` is the reply after any index.
pub(crate) fn stored_error(code: i64, rest: &[Value], key: &str) -> Option<Error> {
    match (code, rest) {
        (-2, []) => Some(Error::WrongType(key.to_owned())),
        (-1, [Value::BulkString(value)]) => Some(Error::CorruptValue {
            key: key.to_owned(),
            value: String::from_utf8_lossy(value).into_owned(),
        }),
        _ => None,
    }
}

/// The integers of an array reply, or `None`.
pub(crate) fn ints(reply: &Value) -> Option<Vec<i64>> {
    let Value::Array(items) = reply else {
        return None;
    };
    items
        .iter()
        .map(|v| match v {
            Value::Int(i) => Some(*i),
            _ => None,
        })
        .collect()
}

/// The decision a reply of the decide script about Redis key `key` stands for.
pub(crate) fn decode_decision(
    reply: &Value,
    quota: &MicroQuota,
    key: &str,
) -> Result<Result<Allowed, Denied>, Error> {
    let bad = || Error::UnexpectedReply(format!("{reply:?}"));
    if let Value::Array(items) = reply {
        if let [Value::Int(code @ (-1 | -2)), rest @ ..] = items.as_slice() {
            return Err(stored_error(*code, rest, key).unwrap_or_else(bad));
        }
    }
    let ints = ints(reply).ok_or_else(bad)?;
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

/// What a reply of the refund script about Redis key `key` stands for.
pub(crate) fn decode_refund(reply: &Value, key: &str) -> Result<(), Error> {
    match reply {
        Value::Int(_) => Ok(()),
        Value::Array(items) => match items.as_slice() {
            [Value::Int(code), rest @ ..] => stored_error(*code, rest, key).map_or(Ok(()), Err),
            _ => Err(Error::UnexpectedReply(format!("{reply:?}"))),
        },
        _ => Err(Error::UnexpectedReply(format!("{reply:?}"))),
    }
}
