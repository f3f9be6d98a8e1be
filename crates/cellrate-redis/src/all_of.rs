//! All-or-nothing checks across several keys (per user, per org, global) in one atomic script:
//! the Redis form of [`all_of`](cellrate::all_of), with the same answers.
//!
//! The script spends in each bucket in the order given, on a local copy; only if every bucket
//! admits are the new TATs written. Atomic on the server, so unlike the in-process form it
//! needs no rollback. On a Redis Cluster every key must share one slot: give them one hash
//! tag, such as `{acme}:user7` and `{acme}:org`.

use super::joint::{self, JointBooking, JointDenial};
use super::local::Ask;
use super::policy;
use super::script::{self, lua_now, lua_read_tat, lua_store, MicroQuota};
use super::{Error, RedisLimiter};
use cellrate::Nanos;
use cellrate::Quota;
use cellrate::{Allowed, Denied};
use redis::Script;
use std::sync::{Arc, LazyLock};

/// KEYS: the buckets. ARGV: cost, now µs (-1: TIME), start empty (1/0), keep ms, 1 if the
/// caller's time had a fraction of a µs, then interval µs and burst per key. Admitted: {1, then
/// per key: reset_after µs, TAT after, G} (the last two: the receipt of that key's spend).
/// Refused: {0, index of the refusing key, its reset_after, its retry (-1: never)}, then for
/// every key, judged alone on the state before this call, {reset_after, retry (-1: never, -2:
/// would admit)}. A key that holds no TAT: {-2, index} or {-1, index}; the server's clock out
/// of range: {-3}. Rounding as in the decision script: decided at `now` rounded down, TATs
/// that start from `now` written from it rounded up. Each key keeps its credit given back (G).
const ALL_OF_LUA: &str = concat!(
    "local cost = tonumber(ARGV[1])\n",
    lua_now!("2"),
    r#"local start_empty = ARGV[3] == '1'
local keep_ms = tonumber(ARGV[4])
local up = tonumber(ARGV[5])
"#,
    lua_store!(),
    r#"local n = #KEYS
local interval, burst, before, tats, gs, fresh = {}, {}, {}, {}, {}, {}
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
    gs[key] = g
  end
end
local function ahead_of(t) if t > now then return t - now end return 0 end
local resets, refused = {1}, nil
for i = 1, n do
  local key = KEYS[i]
  local ahead = ahead_of(tats[key])
  local need = ahead + cost * interval[i]
  if cost > burst[i] then refused = {0, i, ahead, -1} break end
  if need > burst[i] * interval[i] then refused = {0, i, ahead, need - burst[i] * interval[i]} break end
  if cost > 0 then
    if ahead == 0 then tats[key] = now + up + need else tats[key] = now + need end
  end
  table.insert(resets, need)
  table.insert(resets, tats[key])
  table.insert(resets, gs[key])
end
if not refused then
  if cost > 0 then
    for key, t in pairs(tats) do store(key, t, gs[key], keep_ms) end
  end
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
    store(key, before[key], 0, keep_ms)
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

/// The first sight of a key of an all-of call on a Cluster node importing its slot, which
/// neither that node nor the one migrating the slot holds: an absent bucket. KEYS[1]: the key.
/// ARGV: its index among the call's keys (from 1), then the all-of script's ARGV. Writes what
/// the absence stands for, so that the all-of script (which Redis runs on an importing node
/// only when it holds every key) can run there: a full bucket, as TAT 1 (at or before any
/// time, on any clock), which every script reads as the missing key it replaces, kept 1 s (far
/// longer than the pipeline takes to reach the all-of call after it; were it gone first, the
/// call would meet `TRYAGAIN` and the key be written again); or, for buckets that start empty and a call that spends, the first sight the
/// all-of script would write itself (an empty bucket from now). Writes nothing where the key
/// exists, nor for a peek of buckets that start empty (a peek is no first sight). Returns 1 when
/// it wrote, 0 otherwise, or {-3} for the server's clock out of range.
const FIRST_SIGHT_LUA: &str = concat!(
    "if redis.pcall('GET', KEYS[1]) then return 0 end\n",
    lua_now!("3"),
    r#"local keep = tonumber(ARGV[5])
local up = tonumber(ARGV[6])
"#,
    lua_store!(),
    r#"if ARGV[4] ~= '1' then
  redis.call('SET', KEYS[1], '1', 'PX', 1000)
  return 1
end
if tonumber(ARGV[2]) == 0 then return 0 end
local i = tonumber(ARGV[1])
local interval, burst = tonumber(ARGV[5 + 2 * i]), tonumber(ARGV[6 + 2 * i])
store(KEYS[1], now + up + burst * interval, 0, keep)
return 1
"#
);

/// The first-sight script, made once for every limiter.
static FIRST_SIGHT: LazyLock<Arc<Script>> =
    LazyLock::new(|| Arc::new(Script::new(FIRST_SIGHT_LUA)));

impl RedisLimiter {
    /// Spends `cost` tokens in every `(key, quota)` bucket, or in none, on the server's clock;
    /// the failure policy applies. Answers exactly as [`all_of`](cellrate::all_of) would over
    /// in-process limiters with the same quotas: admitted, the smallest `remaining` and longest
    /// `reset_after`; refused, the longest `retry_after` (`None` if any bucket can never admit
    /// the cost), the smallest `remaining` and longest `reset_after`, nothing spent.
    /// [`RedisLimiter::reserve_all_of_n`] tells each key's own figures as well.
    pub async fn check_all_of_n(
        &self,
        limits: &[(&str, Quota)],
        cost: u32,
    ) -> Result<Allowed, Denied> {
        self.reserve_all_of_n(limits, cost)
            .await
            .map(|booking| booking.allowed())
            .map_err(|denial| denial.denied())
    }

    /// [`RedisLimiter::check_all_of_n`], answering each key's own figures and, when admitted,
    /// a [`Booking`](super::Booking) per key that can give its tokens back. The failure policy
    /// applies; then every key gets the policy's answer (under
    /// [`FailurePolicy::Local`](super::FailurePolicy::Local), each key its own local one), and
    /// the bookings give nothing back.
    pub async fn reserve_all_of_n(
        &self,
        limits: &[(&str, Quota)],
        cost: u32,
    ) -> Result<JointBooking, JointDenial> {
        match self.all_of_n(limits, cost, None).await {
            Ok(answer) => {
                let combined = answer.as_ref().map(JointBooking::allowed);
                self.counters
                    .record(&combined.map_err(|d| d.denied()), cost);
                answer
            }
            Err(e) => {
                let (answer, source) = policy::answer_each(
                    &e,
                    Ask::AllOf { limits, cost },
                    &self.options,
                    &self.local,
                    &self.counters,
                );
                joint::from_policy(self, limits, cost, answer, source)
            }
        }
    }

    /// [`RedisLimiter::check_all_of_n`] without a failure policy: Redis's answer or why
    /// there is none. An empty set admits everything.
    pub async fn try_check_all_of_n(
        &self,
        limits: &[(&str, Quota)],
        cost: u32,
    ) -> Result<Result<Allowed, Denied>, Error> {
        Ok(joint::combined(self.all_of_n(limits, cost, None).await?))
    }

    /// [`RedisLimiter::try_check_all_of_n`] at `now` (ns since the Unix epoch) instead of
    /// the server's clock.
    pub async fn try_check_all_of_n_at(
        &self,
        limits: &[(&str, Quota)],
        cost: u32,
        now: Nanos,
    ) -> Result<Result<Allowed, Denied>, Error> {
        Ok(joint::combined(
            self.all_of_n(limits, cost, Some(now)).await?,
        ))
    }

    /// [`RedisLimiter::reserve_all_of_n`] without a failure policy.
    pub async fn try_reserve_all_of_n(
        &self,
        limits: &[(&str, Quota)],
        cost: u32,
    ) -> Result<Result<JointBooking, JointDenial>, Error> {
        self.all_of_n(limits, cost, None).await
    }

    /// [`RedisLimiter::try_reserve_all_of_n`] at `now` (ns since the Unix epoch).
    pub async fn try_reserve_all_of_n_at(
        &self,
        limits: &[(&str, Quota)],
        cost: u32,
        now: Nanos,
    ) -> Result<Result<JointBooking, JointDenial>, Error> {
        self.all_of_n(limits, cost, Some(now)).await
    }

    async fn all_of_n(
        &self,
        limits: &[(&str, Quota)],
        cost: u32,
        now: Option<Nanos>,
    ) -> Result<Result<JointBooking, JointDenial>, Error> {
        if limits.is_empty() {
            return Ok(Ok(JointBooking::empty()));
        }
        let time = now.map(script::micros_since_epoch).transpose()?;
        let quotas = limits
            .iter()
            .map(|(_, q)| MicroQuota::new(q))
            .collect::<Result<Vec<_>, _>>()?;
        let keys: Vec<String> = limits
            .iter()
            .zip(&quotas)
            .map(|((k, _), q)| self.bucket_name(k, q))
            .collect();
        // [interval, burst, cost, now, start empty, keep, fraction]: from the third on, then
        // each quota.
        let common = self.args(&quotas[0], cost, time);
        let mut args = common[2..].to_vec();
        for q in &quotas {
            args.extend([q.interval_us as i64, i64::from(q.burst)]);
        }
        let reply = self
            .conn
            .invoke_joint(
                &self.all_of,
                Some(&FIRST_SIGHT),
                &keys,
                &args,
                self.options.deadline,
            )
            .await?;
        joint::decode(self, &reply, limits, &quotas, &keys, cost)
    }
}
