//! Decisions of one key.

use super::local::Ask;
use super::script::{self, MicroQuota};
use super::{Answer, Error, RedisLimiter, Source};
use cellrate::Nanos;
use cellrate::Quota;
use cellrate::{Allowed, Denied};
use redis::{Script, Value};
use std::sync::Arc;

impl RedisLimiter {
    /// Spends one token of `key`'s bucket, on the server's clock; the failure policy applies.
    pub async fn check_key(&self, key: &str) -> Result<Allowed, Denied> {
        self.check_key_n(key, 1).await
    }

    /// Spends `cost` tokens of `key`'s bucket if all are there, on the server's clock. When
    /// Redis gives no decision the [`FailurePolicy`](super::FailurePolicy) answers, except for
    /// a [usage error](Error::is_usage), which is refused; either way the answer is counted
    /// in [`RedisStats`](super::RedisStats). `cost == 0` is a peek; `cost > burst` is denied with no
    /// retry time.
    pub async fn check_key_n(&self, key: &str, cost: u32) -> Result<Allowed, Denied> {
        let quota = self.quota;
        self.check_one(key, cost, Ok(quota), quota.effective())
            .await
    }

    /// [`RedisLimiter::check_key_n`] on the key's bucket under another quota (for example a
    /// per-plan limit). A quota is part of a bucket's identity: the key has one bucket under
    /// each quota it is used with (its Redis name carries the quota, see
    /// [`RedisLimiter::redis_key`]), each decided under that quota alone; a key that moves to
    /// another plan starts there as a new key does.
    pub async fn check_key_n_with_quota(
        &self,
        key: &str,
        cost: u32,
        quota: &Quota,
    ) -> Result<Allowed, Denied> {
        self.check_one(key, cost, MicroQuota::new(quota), *quota)
            .await
    }

    /// [`RedisLimiter::check_key_n_with_quota`], telling who answered: Redis, the local
    /// fallback or the failure policy, or a [usage error](Error::is_usage) refused as a fault
    /// (see [`Source`]).
    pub async fn check_key_n_answer(&self, key: &str, cost: u32, quota: &Quota) -> Answer<Allowed> {
        let ((decision, _), source) = self
            .answer_one(key, cost, MicroQuota::new(quota), *quota, false)
            .await;
        Answer { decision, source }
    }

    async fn check_one(
        &self,
        key: &str,
        cost: u32,
        micro: Result<MicroQuota, Error>,
        quota: Quota,
    ) -> Result<Allowed, Denied> {
        self.answer_one(key, cost, micro, quota, false).await.0 .0
    }

    /// The answer to `cost` tokens of `key` under `quota` on the server's clock, the failure
    /// policy applied and counted, with the receipt when Redis spent and `receipt` asks for
    /// it; and who answered.
    pub(crate) async fn answer_one(
        &self,
        key: &str,
        cost: u32,
        micro: Result<MicroQuota, Error>,
        quota: Quota,
        receipt: bool,
    ) -> (script::Decided, Source) {
        let outcome = match micro {
            Ok(micro) => {
                if let Some(denied) = self.cached_refusal(key, cost, &micro) {
                    self.counters.record_cached();
                    self.note_denied(key);
                    return ((Err(denied), None), Source::Redis);
                }
                self.spend_one(key, cost, &micro, None, receipt).await
            }
            Err(e) => Err(e),
        };
        let (outcome, receipt) = match outcome {
            Ok((decision, receipt)) => (Ok(decision), receipt),
            Err(e) => (Err(e), None),
        };
        let (decision, source) = self.settle(outcome, Ask::One { key, cost, quota });
        if decision.is_err() {
            self.note_denied(key);
        }
        ((decision, receipt), source)
    }

    /// The decision for `cost` tokens of `key` at `now` (nanoseconds since the Unix epoch),
    /// without a failure policy: Redis's answer or why there is none. On the microsecond grid
    /// it equals [`Limiter::at`](cellrate::Limiter::at)`(now).check_n(cost)` on the same schedule; off
    /// it, the decision is made at `now` rounded down and the bucket charged from `now`
    /// rounded up, so it never admits what the exact limiter would refuse.
    pub async fn try_check_key_n_at(
        &self,
        key: &str,
        cost: u32,
        now: Nanos,
    ) -> Result<Result<Allowed, Denied>, Error> {
        self.decide_one(key, cost, &self.quota, Some(now)).await
    }

    /// [`RedisLimiter::try_check_key_n_at`] on the server's clock.
    pub async fn try_check_key_n(
        &self,
        key: &str,
        cost: u32,
    ) -> Result<Result<Allowed, Denied>, Error> {
        if let Some(denied) = self.cached_refusal(key, cost, &self.quota) {
            return Ok(Err(denied));
        }
        self.decide_one(key, cost, &self.quota, None).await
    }

    /// The decision under `quota` for this call only, on the server's clock.
    pub async fn try_check_key_n_with_quota(
        &self,
        key: &str,
        cost: u32,
        quota: &Quota,
    ) -> Result<Result<Allowed, Denied>, Error> {
        let quota = MicroQuota::new(quota)?;
        if let Some(denied) = self.cached_refusal(key, cost, &quota) {
            return Ok(Err(denied));
        }
        self.decide_one(key, cost, &quota, None).await
    }

    /// [`RedisLimiter::try_check_key_n_with_quota`] at `now` (ns since the Unix epoch).
    pub async fn try_check_key_n_with_quota_at(
        &self,
        key: &str,
        cost: u32,
        quota: &Quota,
        now: Nanos,
    ) -> Result<Result<Allowed, Denied>, Error> {
        self.decide_one(key, cost, &MicroQuota::new(quota)?, Some(now))
            .await
    }

    /// The deny cache's refusal of `cost` tokens of `key`, if it has one.
    pub(crate) fn cached_refusal(
        &self,
        key: &str,
        cost: u32,
        quota: &MicroQuota,
    ) -> Option<Denied> {
        self.deny
            .as_ref()?
            .refuse(&self.cache_name(key, quota), cost, quota)
    }

    /// Remembers a refusal by Redis on the server's clock in the deny cache.
    pub(crate) fn remember(
        &self,
        key: &str,
        decision: &Result<Allowed, Denied>,
        quota: &MicroQuota,
    ) {
        if let (Some(cache), Err(denied)) = (&self.deny, decision) {
            cache.remember(&self.cache_name(key, quota), denied, quota);
        }
    }

    async fn decide_one(
        &self,
        key: &str,
        cost: u32,
        quota: &MicroQuota,
        now: Option<Nanos>,
    ) -> Result<Result<Allowed, Denied>, Error> {
        Ok(self.spend_one(key, cost, quota, now, false).await?.0)
    }

    /// The decision and, when it spent and `receipt` asks for it, its receipt.
    pub(crate) async fn spend_one(
        &self,
        key: &str,
        cost: u32,
        quota: &MicroQuota,
        now: Option<Nanos>,
        receipt: bool,
    ) -> Result<script::Decided, Error> {
        let time = now.map(script::micros_since_epoch).transpose()?;
        let mut args = self.args(quota, cost, time).to_vec();
        args.push(i64::from(receipt));
        let (reply, redis_key) = self.invoke_key(&self.decide, key, quota, &args).await?;
        let decided = script::decode_decision(&reply, quota, &redis_key)?;
        if now.is_none() {
            self.remember(key, &decided.0, quota);
        }
        Ok(decided)
    }

    /// Runs `script` on the Redis key of `key`'s bucket under `quota` with `args` within the
    /// deadline: the reply and the Redis key.
    pub(crate) async fn invoke_key(
        &self,
        script: &Arc<Script>,
        key: &str,
        quota: &MicroQuota,
        args: &[i64],
    ) -> Result<(Value, String), Error> {
        let redis_key = self.bucket_name(key, quota);
        let keys = std::slice::from_ref(&redis_key);
        let reply = self
            .conn
            .invoke(script, keys, args, self.options.deadline)
            .await?;
        Ok((reply, redis_key))
    }

    /// The script arguments for `n` tokens under `quota` at `now` (the server's clock if
    /// `None`).
    pub(crate) fn args(
        &self,
        quota: &MicroQuota,
        n: u32,
        now: Option<script::MicroTime>,
    ) -> [i64; 7] {
        let keep = self.options.keep_ms(now.is_some());
        script::args(quota, n, now, self.options.start_empty, keep)
    }
}
