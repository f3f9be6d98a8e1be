//! Batches: many decisions in few round trips: pipelines of at most
//! [`RedisOptions::batch_chunk`](super::RedisOptions::batch_chunk) calls, one sequence per
//! node on a Cluster.

use super::local::Ask;
use super::node_script::Call;
use super::{script, Error, RedisLimiter};
use cellrate::Nanos;
use cellrate::{Allowed, Denied};

/// One answer of a batch: the decision, or why there is none for this request.
type Answer = Result<Result<Allowed, Denied>, Error>;

impl RedisLimiter {
    /// Many decisions on the server's clock: each `(key, cost)` as by
    /// [`RedisLimiter::check_key_n`], answers in order, the failure policy applied to each
    /// request without a decision. Use it for all the keys one request must pass, or for many
    /// requests at once. Sent in chunks of
    /// [`batch_chunk`](super::RedisOptions::batch_chunk) calls, each with the whole deadline:
    /// when one chunk fails, the others keep their answers.
    pub async fn check_many(&self, requests: &[(&str, u32)]) -> Vec<Result<Allowed, Denied>> {
        let answers = self.many(requests, None).await;
        answers
            .into_iter()
            .zip(requests)
            .map(|(answer, &(key, cost))| {
                let quota = self.quota.effective();
                match answer {
                    Err(Cached(denied)) => {
                        self.counters.record_cached();
                        Err(denied)
                    }
                    Ok(outcome) => self.settle(outcome, Ask::One { key, cost, quota }).0,
                }
            })
            .collect()
    }

    /// Many decisions on the server's clock, without a failure policy. Each inner answer is
    /// the decision or why there is none for that request (a key of the wrong type, a chunk
    /// that timed out ([`Error::outcome_unknown`]) or was not sent); the outer error is one
    /// that concerns the whole batch before anything is sent.
    pub async fn try_check_many(&self, requests: &[(&str, u32)]) -> Result<Vec<Answer>, Error> {
        self.try_many(requests, None).await
    }

    /// [`RedisLimiter::try_check_many`] at `now` (ns since the Unix epoch) instead of the
    /// server's clock; the outer error is a time out of range.
    pub async fn try_check_many_at(
        &self,
        requests: &[(&str, u32)],
        now: Nanos,
    ) -> Result<Vec<Answer>, Error> {
        self.try_many(requests, Some(now)).await
    }

    async fn try_many(
        &self,
        requests: &[(&str, u32)],
        now: Option<Nanos>,
    ) -> Result<Vec<Answer>, Error> {
        if let Some(now) = now {
            script::micros_since_epoch(now)?;
        }
        Ok(self
            .many(requests, now)
            .await
            .into_iter()
            .map(|answer| answer.unwrap_or_else(|Cached(denied)| Ok(Err(denied))))
            .collect())
    }

    /// The answers in order: `Err(Cached)` for a refusal of the deny cache (on the server's
    /// clock only), `Ok` for everything that went to Redis.
    async fn many(
        &self,
        requests: &[(&str, u32)],
        now: Option<Nanos>,
    ) -> Vec<Result<Answer, Cached>> {
        let time = match now.map(script::micros_since_epoch).transpose() {
            Ok(time) => time,
            Err(e) => return requests.iter().map(|_| Ok(Err(e.clone()))).collect(),
        };
        let mut answers: Vec<Result<Answer, Cached>> = Vec::with_capacity(requests.len());
        let mut calls = Vec::with_capacity(requests.len());
        let mut sent = Vec::with_capacity(requests.len());
        for (i, &(key, cost)) in requests.iter().enumerate() {
            let cached = match now {
                None => self.cached_refusal(key, cost, &self.quota),
                Some(_) => None,
            };
            if let Some(denied) = cached {
                answers.push(Err(Cached(denied)));
                continue;
            }
            // Replaced below by the reply; an error if there were none.
            answers.push(Ok(Err(Error::UnexpectedReply("no reply".to_owned()))));
            sent.push(i);
            calls.push(Call {
                key: self.redis_key(key),
                args: self.args(&self.quota, cost, time),
            });
        }
        let replies = self
            .conn
            .invoke_many(&self.decide, &calls, self.pace())
            .await;
        for ((i, call), reply) in sent.into_iter().zip(&calls).zip(replies) {
            let answer = reply.and_then(|reply| match reply {
                redis::Value::ServerError(e) => Err(Error::from(redis::RedisError::from(e))),
                reply => script::decode_decision(&reply, &self.quota, &call.key).map(|d| d.0),
            });
            if let (Ok(decision), None) = (&answer, now) {
                self.remember(requests[i].0, decision, &self.quota);
            }
            answers[i] = Ok(answer);
        }
        answers
    }
}

/// A refusal of the deny cache: no round trip was made.
struct Cached(Denied);
