//! Batches: many decisions in one round trip (one per slot on a Cluster).

use super::conn::Call;
use super::{script, Error, RedisLimiter};
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};

impl RedisLimiter {
    /// Many decisions in one round trip, on the server's clock: each `(key, cost)` as by
    /// [`RedisLimiter::check_key_n`], answers in order, the failure policy applied to each.
    /// Use it for all the keys one request must pass, or for many requests at once.
    pub async fn check_many(&self, requests: &[(&str, u32)]) -> Vec<Result<Allowed, Denied>> {
        match self.many(requests, None).await {
            Ok(answers) => answers
                .into_iter()
                .zip(requests)
                .map(|(answer, &(_, cost))| self.settle(answer, cost, self.quota.burst))
                .collect(),
            Err(e) => {
                let burst = self.quota.burst;
                let fallback = self.fallback();
                requests
                    .iter()
                    .map(|&(_, cost)| fallback.answer(&e, cost, burst, &self.counters))
                    .collect()
            }
        }
    }

    /// Many decisions in one round trip on the server's clock, without a
    /// failure policy. The outer error is a failure of the whole batch (its outcome may be
    /// unknown); an inner error belongs to one request (for example a key of the wrong type).
    pub async fn try_check_many(
        &self,
        requests: &[(&str, u32)],
    ) -> Result<Vec<Result<Result<Allowed, Denied>, Error>>, Error> {
        self.many(requests, None).await
    }

    /// [`RedisLimiter::try_check_many`] at `now` (ns since the Unix epoch) instead of the
    /// server's clock.
    pub async fn try_check_many_at(
        &self,
        requests: &[(&str, u32)],
        now: Nanos,
    ) -> Result<Vec<Result<Result<Allowed, Denied>, Error>>, Error> {
        self.many(requests, Some(now)).await
    }

    async fn many(
        &self,
        requests: &[(&str, u32)],
        now: Option<Nanos>,
    ) -> Result<Vec<Result<Result<Allowed, Denied>, Error>>, Error> {
        let now_us = now.map(script::micros_since_epoch).transpose()?;
        let calls: Vec<Call> = requests
            .iter()
            .map(|&(key, cost)| Call {
                key: self.redis_key(key),
                args: self.args(&self.quota, cost, now_us),
            })
            .collect();
        let replies = self
            .deadline(self.conn.invoke_many(&self.decide, &calls))
            .await?;
        Ok(replies
            .iter()
            .map(|reply| match reply {
                redis::Value::ServerError(e) => Err(Error::Redis(e.clone().into())),
                reply => script::decode_decision(reply, &self.quota),
            })
            .collect())
    }
}
