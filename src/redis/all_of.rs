//! All-or-nothing checks across several keys (per user, per org, global) in one atomic script:
//! the Redis form of [`all_of`](crate::all_of), with the same answers.
//!
//! The script spends in each bucket in the order given, on a local copy; only if every bucket
//! admits are the new TATs written. Atomic on the server, so unlike the in-process form it
//! needs no rollback. On a Redis Cluster every key must share one slot: give them one hash
//! tag, such as `{acme}:user7` and `{acme}:org`.

use super::local::Ask;
use super::script::{self, lua_ceil_ms, lua_now, lua_read_tat, MicroQuota};
use super::{Error, RedisLimiter};
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;
use redis::{Script, Value};

/// KEYS: the buckets. ARGV: cost, now µs (-1: TIME), start empty (1/0), keep ms, 1 if the
/// caller's time had a fraction of a µs, then interval µs and burst per key. Admitted: {1,
/// reset_after µs per key}. Refused: {0, index of the refusing key, its reset_after, its retry
/// (-1: never)}, then for every key, judged alone on the state before this call, {reset_after,
/// retry (-1: never, -2: would admit)}. A key that holds no TAT: {-2, index} or {-1, index,
/// value}. Rounding as in the decision script: decided at `now` rounded down, TATs that
/// start from `now` written from it rounded up.
const ALL_OF_LUA: &str = concat!(
    "local cost = tonumber(ARGV[1])\n",
    lua_now!("2"),
    r#"local start_empty = ARGV[3] == '1'
local keep_ms = tonumber(ARGV[4])
local up = tonumber(ARGV[5])
local function expire_ms(us)
"#,
    lua_ceil_ms!("us"),
    r#"  return ms + keep_ms
end
local n = #KEYS
local interval, burst, before, tats, fresh = {}, {}, {}, {}, {}
for i = 1, n do
  interval[i] = tonumber(ARGV[4 + 2 * i])
  burst[i] = tonumber(ARGV[5 + 2 * i])
  local key = KEYS[i]
  if before[key] == nil then
"#,
    lua_read_tat!("key", ", i"),
    r#"    if tat then
      before[key] = tat
    elseif start_empty then
      before[key] = now + up + burst[i] * interval[i]
      fresh[key] = true
    else
      before[key] = now
    end
    tats[key] = before[key]
  end
end
local function ahead_of(t) if t > now then return t - now end return 0 end
local resets, refused = {}, nil
for i = 1, n do
  local ahead = ahead_of(tats[KEYS[i]])
  local need = ahead + cost * interval[i]
  if cost > burst[i] then refused = {0, i, ahead, -1} break end
  if need > burst[i] * interval[i] then refused = {0, i, ahead, need - burst[i] * interval[i]} break end
  resets[i] = need
  if cost > 0 then
    if ahead == 0 then tats[KEYS[i]] = now + up + need else tats[KEYS[i]] = now + need end
  end
end
if not refused then
  if cost > 0 then
    for key, t in pairs(tats) do
      redis.call('SET', key, string.format('%d', t), 'PX', expire_ms(t - now))
    end
  end
  table.insert(resets, 1, 1)
  return resets
end
for i = 1, n do
  local key = KEYS[i]
  local ahead = ahead_of(before[key])
  local retry = -2
  if cost > burst[i] then retry = -1
  elseif ahead + cost * interval[i] > burst[i] * interval[i] then
    retry = ahead + cost * interval[i] - burst[i] * interval[i]
  end
  table.insert(refused, ahead)
  table.insert(refused, retry)
  if fresh[key] and cost > 0 then
    redis.call('SET', key, string.format('%d', before[key]), 'PX', expire_ms(ahead))
    fresh[key] = nil
  end
end
return refused
"#
);

/// The all-of script.
pub(crate) fn all_of_script() -> Script {
    Script::new(ALL_OF_LUA)
}

impl RedisLimiter {
    /// Spends `cost` tokens in every `(key, quota)` bucket, or in none, on the server's clock;
    /// the failure policy applies. Answers exactly as [`all_of`](crate::all_of) would over
    /// in-process limiters with the same quotas: admitted, the smallest `remaining` and longest
    /// `reset_after`; refused, the longest `retry_after` (`None` if any bucket can never admit
    /// the cost), the smallest `remaining` and longest `reset_after`, nothing spent.
    pub async fn check_all_of_n(
        &self,
        limits: &[(&str, Quota)],
        cost: u32,
    ) -> Result<Allowed, Denied> {
        let outcome = self.all_of_n(limits, cost, None).await;
        self.settle(outcome, Ask::AllOf { limits, cost })
    }

    /// [`RedisLimiter::check_all_of_n`] without a failure policy: Redis's answer or why
    /// there is none. An empty set admits everything.
    pub async fn try_check_all_of_n(
        &self,
        limits: &[(&str, Quota)],
        cost: u32,
    ) -> Result<Result<Allowed, Denied>, Error> {
        self.all_of_n(limits, cost, None).await
    }

    /// [`RedisLimiter::try_check_all_of_n`] at `now` (ns since the Unix epoch) instead of
    /// the server's clock.
    pub async fn try_check_all_of_n_at(
        &self,
        limits: &[(&str, Quota)],
        cost: u32,
        now: Nanos,
    ) -> Result<Result<Allowed, Denied>, Error> {
        self.all_of_n(limits, cost, Some(now)).await
    }

    async fn all_of_n(
        &self,
        limits: &[(&str, Quota)],
        cost: u32,
        now: Option<Nanos>,
    ) -> Result<Result<Allowed, Denied>, Error> {
        if limits.is_empty() {
            return Ok(Ok(Allowed::unlimited()));
        }
        let time = now.map(script::micros_since_epoch).transpose()?;
        let quotas = limits
            .iter()
            .map(|(_, q)| MicroQuota::new(q))
            .collect::<Result<Vec<_>, _>>()?;
        let keys: Vec<String> = limits.iter().map(|(k, _)| self.redis_key(k)).collect();
        // [interval, burst, cost, now, start empty, keep, fraction]: from the third on, then
        // each quota.
        let common = self.args(&quotas[0], cost, time);
        let mut args = common[2..].to_vec();
        for q in &quotas {
            args.extend([q.interval_us as i64, i64::from(q.burst)]);
        }
        let reply = self
            .conn
            .invoke(&self.all_of, &keys, &args, self.options.deadline)
            .await?;
        decode(&reply, &quotas, &keys)
    }
}

/// The combined answer a reply of the all-of script about Redis keys `keys` stands for.
fn decode(
    reply: &Value,
    quotas: &[MicroQuota],
    keys: &[String],
) -> Result<Result<Allowed, Denied>, Error> {
    let bad = || Error::UnexpectedReply(format!("{reply:?}"));
    if let Value::Array(items) = reply {
        if let [Value::Int(code @ (-1 | -2)), Value::Int(index), rest @ ..] = items.as_slice() {
            let key = usize::try_from(*index)
                .ok()
                .and_then(|i| keys.get(i.wrapping_sub(1)))
                .ok_or_else(bad)?;
            return Err(script::stored_error(*code, rest, key).unwrap_or_else(bad));
        }
    }
    let ints = script::ints(reply).ok_or_else(bad)?;
    let us = |i: i64| u64::try_from(i).map_err(|_| bad());
    let retry = |i: i64| {
        if i == -1 {
            Ok(None)
        } else {
            us(i).map(|r| Some(r * 1000))
        }
    };
    match ints.split_first() {
        Some((1, resets)) if resets.len() == quotas.len() => {
            let mut answer = Allowed::unlimited();
            for (q, &reset) in quotas.iter().zip(resets) {
                answer = Allowed::new(q.level(us(reset)?)).stricter(answer);
            }
            Ok(Ok(answer))
        }
        Some((0, [index, reset, wait, each @ ..])) if each.len() == 2 * quotas.len() => {
            let position = usize::try_from(*index).map_err(|_| bad())?;
            let q = quotas.get(position.wrapping_sub(1)).ok_or_else(bad)?;
            let mut answer = Denied::new(q.level(us(*reset)?), retry(*wait)?);
            for (q, pair) in quotas.iter().zip(each.chunks(2)) {
                let level = q.level(us(pair[0])?);
                answer = answer.stricter(match pair[1] {
                    -2 => Ok(Allowed::new(level)),
                    wait => Err(Denied::new(level, retry(wait)?)),
                });
            }
            Ok(Err(answer))
        }
        _ => Err(bad()),
    }
}
