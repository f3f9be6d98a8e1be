//! The one-key server-side Lua scripts (decide, give back), their arguments and the decoding of
//! their replies into the crate's exact [`Allowed`]/[`Denied`] and a [`Receipt`].
//!
//! Lua numbers are doubles: integers are exact up to 2^53, which microseconds since 1970 are
//! (about 1.8e15) and nanoseconds are not. The scripts therefore work in whole microseconds and
//! use only `tonumber` on integer strings, `+`, `-`, `*` and comparisons, on values kept below
//! 2^53 by the bounds checked in [`MicroQuota`] and [`micros_since_epoch`]. The one division (the
//! key's expiry in milliseconds) is corrected with exact integer comparisons and never affects a
//! decision. Remaining tokens are worked out in Rust from the figures the script returns.
//!
//! A key holds `TAT` or, once credit was given back on it, `TAT:G` (docs/design.md, section 7:
//! G is the key's running total of credit given back, in µs).

use super::error::Error;
pub(crate) use super::micros::{args, micros_since_epoch, MicroQuota, MicroTime, Receipt};
use cellrate::{Allowed, Denied};
use redis::{Script, Value};

/// Lua: `now` from ARGV[$arg] in µs, or the server's `TIME` when it is negative; `{-3}` for a
/// server clock past [`MAX_NOW_US`](super::micros::MAX_NOW_US) (a caller's time is checked before sending).
macro_rules! lua_now {
    ($arg:literal) => {
        concat!(
            "local now = tonumber(ARGV[",
            $arg,
            "])\n",
            "if now < 0 then\n",
            "  local t = redis.call('TIME')\n",
            "  now = t[1] * 1000000 + t[2]\n",
            "  if now > 4503599627370495 then return {-3} end\n",
            "end\n"
        )
    };
}
pub(crate) use lua_now;

/// Lua: the arguments every one-key script starts with: `interval`, `burst`, `$n` (the cost or
/// the tokens given back) and `now`.
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

/// Lua: `stored` (the raw value, or false), `tat` (its TAT, or false) and `g` (its credit given
/// back, 0 if none) of key `$key`. Anything but what the scripts write (`TAT` or `TAT:G`, each a
/// positive integer without sign, exponent or leading zero, TAT at most 2^52 + 2^51 and G at
/// most 2^51) ends the script: `{-2$at}` for a key of another type, `{-1$at}` for a string that
/// is neither. The value itself is never returned: it may be someone else's data.
macro_rules! lua_read_tat {
    ($key:literal, $at:literal) => {
        concat!(
            "local stored = redis.pcall('GET', ",
            $key,
            ")\n",
            "local tat, g = false, 0\n",
            "if stored then\n",
            "  if type(stored) ~= 'string' then return {-2",
            $at,
            "} end\n",
            "  local t, b = string.match(stored, '^[1-9]%d*$'), nil\n",
            "  if not t then t, b = string.match(stored, '^([1-9]%d*):([1-9]%d*)$') end\n",
            "  tat = t and tonumber(t)\n",
            "  if b then g = tonumber(b) end\n",
            "  if not tat or tat > 6755399441055744 or g > 2251799813685248 then return {-1",
            $at,
            "} end\n",
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

/// Lua: `store(key, t, g, keep)`, which writes `t` (and `:g` when credit was given back) with
/// an expiry of the time until `t + g` in whole milliseconds rounded up (the division corrected
/// exactly), plus `keep` ms, and deletes the key when that is zero. A key with credit given back
/// lives `g` longer than its bucket needs: until then a receipt of an earlier spend may still
/// be given back, and a key made again (with G = 0) must find every such receipt spent
/// (docs/design.md, section 7).
macro_rules! lua_store {
    () => {
        r#"local function store(key, t, g, keep)
  local us = t + g - now
  local ms = math.floor(us / 1000)
  while ms * 1000 > us do ms = ms - 1 end
  while ms * 1000 < us do ms = ms + 1 end
  ms = ms + keep
  if ms <= 0 then
    redis.call('DEL', key)
    return
  end
  local v = string.format('%d', t)
  if g > 0 then v = v .. ':' .. string.format('%d', g) end
  redis.call('SET', key, v, 'PX', ms)
end
"#
    };
}
pub(crate) use lua_store;

/// The decision, the same steps as `gcra::spend`. KEYS[1]: the bucket. ARGV: interval µs,
/// burst, cost, now µs (-1: the server's TIME), start empty (1/0), keep ms (extra key
/// lifetime), 1 when the caller's time had a fraction of a µs (0 otherwise), and 1 when the
/// receipt is wanted. Returns {1, reset_after µs} when allowed, or with a receipt {1,
/// reset_after µs, TAT after, G};
/// {0, reset_after µs, retry_after µs or -1 for never} when denied; {-1} or {-2} for a key that
/// holds no TAT (see `lua_read_tat`), {-3} for a server clock out of range. Writes the new TAT
/// only when allowed, expiring when the bucket is full again (+ G, + keep ms); the one other
/// write is the first sight of a start-empty bucket, which is remembered even when denied
/// (otherwise it would never fill). The decision is made at `now` rounded down and a TAT that
/// starts from `now` is written from `now` rounded up, so the stored TAT is never earlier than
/// the exact one: rounding never grants.
const DECIDE_LUA: &str = concat!(
    lua_args!("cost"),
    "local depth = burst * interval\n",
    lua_read_tat!("KEYS[1]", ""),
    lua_missing_tat!("now + ARGV[7] + depth"),
    lua_store!(),
    r#"local ahead = 0
if tat > now then ahead = tat - now end
local receipt = ARGV[8] == '1'
if cost == 0 then
  if receipt then return {1, ahead, tat, g} end
  return {1, ahead}
end
local need = ahead + cost * interval
local reply
if cost > burst then
  reply = {0, ahead, -1}
elseif need > depth then
  reply = {0, ahead, need - depth}
else
  if ahead == 0 then tat = now + ARGV[7] + need else tat = now + need end
  reply = {1, need}
  if receipt then reply = {1, need, tat, g} end
end
if reply[1] == 0 and (stored or ARGV[5] ~= '1') then return reply end
store(KEYS[1], tat, g, tonumber(ARGV[6]))
return reply
"#
);

/// A give-back or an extra charge for one earlier spend. KEYS[1]: the bucket. ARGV: interval
/// µs and burst of the spend's quota, n (tokens), now µs (-1: TIME), start empty (1/0), keep
/// ms, fraction (1/0), then the receipt's TAT after the spend and G at the spend, and the mode:
/// 0 gives back n of the spend's tokens, 1 charges n more unconditionally. At `c = now` rounded
/// up:
/// - give back: `give = min(n * T, max(0, after - (G - g0) - c))`; if TAT > c, `TAT' =
///   max(TAT - give, c)` and `G += TAT - TAT'` (at most 2^51: beyond that, less is given);
/// - charge: `TAT' = max(TAT, c) + n * T`, at most `c + 2^51`.
///
/// Returns {1, reset_after µs}, or {-1}/{-2}/{-3} as the decision does.
const SETTLE_LUA: &str = concat!(
    lua_args!("n"),
    "now = now + ARGV[7]\n",
    lua_read_tat!("KEYS[1]", ""),
    lua_store!(),
    r#"local keep = tonumber(ARGV[6])
if ARGV[10] == '1' then
  if not tat then
    tat = now
    if ARGV[5] == '1' then tat = now + burst * interval end
  end
  if tat < now then tat = now end
  local new = tat + n * interval
  if new > now + 2251799813685248 then new = now + 2251799813685248 end
  if n > 0 then store(KEYS[1], new, g, keep) end
  return {1, new - now}
end
if not tat or tat <= now then return {1, 0} end
local give = tonumber(ARGV[8]) - (g - tonumber(ARGV[9])) - now
if give > n * interval then give = n * interval end
if give > 2251799813685248 - g then give = 2251799813685248 - g end
if give <= 0 then return {1, tat - now} end
local new = tat - give
if new < now then new = now end
store(KEYS[1], new, g + (tat - new), keep)
return {1, new - now}
"#
);

/// The decision script (SHA1 computed once; EVALSHA with a NOSCRIPT reload).
pub(crate) fn decide_script() -> Script {
    Script::new(DECIDE_LUA)
}

/// The give-back and extra-charge script.
pub(crate) fn settle_script() -> Script {
    Script::new(SETTLE_LUA)
}

/// The error a script reply stands for when it carries no answer: `{-2}` (another type),
/// `{-1}` (a value the scripts did not write) or `{-3}` (the server's clock out of range);
/// `rest` is the reply after any index.
pub(crate) fn stored_error(code: i64, rest: &[Value], key: &str) -> Option<Error> {
    match (code, rest) {
        (-2, []) => Some(Error::WrongType(key.to_owned())),
        (-1, []) => Some(Error::CorruptValue {
            key: key.to_owned(),
        }),
        (-3, []) => Some(Error::ServerTimeOutOfRange),
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

/// The integers of a reply, or the error it stands for (`{-1}`, `{-2}`, `{-3}`, anything
/// unexpected) about Redis key `key`.
fn reply_ints(reply: &Value, key: &str) -> Result<Vec<i64>, Error> {
    let bad = || Error::UnexpectedReply(format!("{reply:?}"));
    let ints = ints(reply).ok_or_else(bad)?;
    if let [code @ -3..=-1] = ints.as_slice() {
        return Err(stored_error(*code, &[], key).unwrap_or_else(bad));
    }
    Ok(ints)
}

/// A decision and, when it spent, its receipt.
pub(crate) type Decided = (Result<Allowed, Denied>, Option<Receipt>);

/// The decision a reply of the decide script about Redis key `key` stands for.
pub(crate) fn decode_decision(
    reply: &Value,
    quota: &MicroQuota,
    key: &str,
) -> Result<Decided, Error> {
    let bad = || Error::UnexpectedReply(format!("{reply:?}"));
    let ints = reply_ints(reply, key)?;
    let nonneg = |i: i64| u64::try_from(i).map_err(|_| bad());
    match ints.as_slice() {
        [1, reset] => Ok((Ok(quota.level(nonneg(*reset)?).allowed()), None)),
        [1, reset, after, g0] => {
            let receipt = Receipt {
                after: nonneg(*after)?,
                g0: nonneg(*g0)?,
            };
            Ok((Ok(quota.level(nonneg(*reset)?).allowed()), Some(receipt)))
        }
        [0, reset, -1] => Ok((Err(quota.level(nonneg(*reset)?).denied(None)), None)),
        [0, reset, retry] => Ok((
            Err(quota
                .level(nonneg(*reset)?)
                .denied(Some(nonneg(*retry)? * 1000))),
            None,
        )),
        _ => Err(bad()),
    }
}

/// What a reply of the settle script about Redis key `key` stands for: the bucket's new time
/// to full, in µs.
pub(crate) fn decode_settle(reply: &Value, key: &str) -> Result<u64, Error> {
    match reply_ints(reply, key)?.as_slice() {
        [1, reset] if *reset >= 0 => Ok(*reset as u64),
        _ => Err(Error::UnexpectedReply(format!("{reply:?}"))),
    }
}
