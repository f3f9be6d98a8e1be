//! The answers of an all-or-nothing check with each key's own figures: [`JointBooking`] (every
//! key spent, each with a booking) and [`JointDenial`] (nothing spent, each key judged alone).

use super::booking::Booking;
use super::local::LocalAnswer;
use super::script::{self, MicroQuota, Receipt};
use super::source::Source;
use super::{Error, RedisLimiter};
use cellrate::Nanos;
use cellrate::Quota;
use cellrate::{Allowed, Denied};
use redis::Value;

/// Every key of an all-or-nothing check spent: the combined answer and one [`Booking`] per
/// key, in the order given, each with that key's own figures.
#[must_use = "dropping a joint booking keeps its spends; cancel or settle it to give tokens back"]
#[derive(Debug)]
pub struct JointBooking {
    each: Vec<Booking>,
    allowed: Allowed,
    source: Source,
}

impl JointBooking {
    pub(crate) fn empty() -> JointBooking {
        JointBooking {
            each: Vec::new(),
            allowed: Allowed::unlimited(),
            source: Source::Redis,
        }
    }

    /// The combined answer: the smallest `remaining` and the longest `reset_after`.
    pub fn allowed(&self) -> Allowed {
        self.allowed
    }

    /// Whether Redis decided; `false` when the failure policy answered (every key then has
    /// the policy's figures, or under [`FailurePolicy::Local`](super::FailurePolicy::Local) its
    /// own local ones, and nothing can be given back).
    pub fn from_redis(&self) -> bool {
        matches!(self.source, Source::Redis)
    }

    /// Who admitted: Redis, the local fallback or the failure policy.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// Each key's booking, in the order the keys were given.
    pub fn each(&self) -> &[Booking] {
        &self.each
    }

    /// The bookings, to give back or settle one by one.
    pub fn into_each(self) -> Vec<Booking> {
        self.each
    }

    /// Gives every key's tokens back on the server's clock (see [`Booking::cancel_at`]); the
    /// first error, after trying them all.
    pub async fn cancel(self) -> Result<(), Error> {
        self.for_each(|b| b.cancel()).await
    }

    /// [`JointBooking::cancel`] at `now` (ns since the Unix epoch).
    pub async fn cancel_at(self, now: Nanos) -> Result<(), Error> {
        self.for_each(|b| b.cancel_at(now)).await
    }

    /// Settles every key at the real cost (see [`Booking::settle_at`]).
    pub async fn settle(self, actual: u32) -> Result<(), Error> {
        self.for_each(|b| b.settle(actual)).await
    }

    /// [`JointBooking::settle`] at `now` (ns since the Unix epoch).
    pub async fn settle_at(self, actual: u32, now: Nanos) -> Result<(), Error> {
        self.for_each(|b| b.settle_at(actual, now)).await
    }

    async fn for_each<F, Fut>(self, f: F) -> Result<(), Error>
    where
        F: Fn(Booking) -> Fut,
        Fut: core::future::Future<Output = Result<(), Error>>,
    {
        let mut first = Ok(());
        for booking in self.each {
            if let Err(e) = f(booking).await {
                first = first.and(Err(e));
            }
        }
        first
    }
}

/// An all-or-nothing check refused, nothing spent: the combined refusal and each key's own
/// answer, judged alone on the state before the check (`Err` for the keys that refused).
#[derive(Clone, Debug)]
pub struct JointDenial {
    denied: Denied,
    each: Vec<Result<Allowed, Denied>>,
    source: Source,
}

impl JointDenial {
    /// The combined refusal: the longest `retry_after` (`None` if some key can never admit
    /// the cost), the smallest `remaining` and the longest `reset_after`.
    pub fn denied(&self) -> Denied {
        self.denied
    }

    /// Whether Redis refused; `false` when the failure policy did (every key then has the
    /// policy's refusal, or under [`FailurePolicy::Local`](super::FailurePolicy::Local) its own
    /// local answer), or for a [usage error](Error::is_usage).
    pub fn from_redis(&self) -> bool {
        matches!(self.source, Source::Redis)
    }

    /// Who refused: Redis, the local fallback or the failure policy; or
    /// [`Source::Fault`] for a usage error, which is no refusal of the request.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// Each key's answer alone, in the order the keys were given: `Err` for a key that
    /// refused, `Ok` for one that would have admitted.
    pub fn each(&self) -> &[Result<Allowed, Denied>] {
        &self.each
    }
}

/// The combined answer of a joint one.
pub(crate) fn combined(answer: Result<JointBooking, JointDenial>) -> Result<Allowed, Denied> {
    answer.map(|b| b.allowed).map_err(|d| d.denied)
}

/// The joint answer for the failure policy's `answer`: each key's own answer when the local
/// fallback gave them (`answer.each`), otherwise the policy's figures for every key; bookings
/// that give nothing back.
pub(crate) fn from_policy(
    limiter: &RedisLimiter,
    limits: &[(&str, Quota)],
    cost: u32,
    answer: LocalAnswer,
    source: Source,
) -> Result<JointBooking, JointDenial> {
    let own = |i: usize| answer.each.get(i).copied().unwrap_or(answer.decision);
    match answer.decision {
        Ok(allowed) => Ok(JointBooking {
            each: limits
                .iter()
                .enumerate()
                .map(|(i, (key, quota))| {
                    // A quota the script cannot hold was refused: these are all holdable.
                    let micro = MicroQuota::new(quota).unwrap_or(limiter.quota);
                    // A key's own answer is an admission when the whole was.
                    let figures = own(i).unwrap_or(allowed);
                    Booking::new(limiter, key, micro, cost, None, figures)
                })
                .collect(),
            allowed,
            source,
        }),
        Err(denied) => Err(JointDenial {
            denied,
            each: (0..limits.len()).map(own).collect(),
            source,
        }),
    }
}

/// The joint answer a reply of the all-of script about Redis keys `keys` stands for.
pub(crate) fn decode(
    limiter: &RedisLimiter,
    reply: &Value,
    limits: &[(&str, Quota)],
    quotas: &[MicroQuota],
    keys: &[String],
    cost: u32,
) -> Result<Result<JointBooking, JointDenial>, Error> {
    let bad = || Error::UnexpectedReply(format!("{reply:?}"));
    let ints = script::ints(reply).ok_or_else(bad)?;
    if let [code @ (-1 | -2), index] = ints.as_slice() {
        let key = usize::try_from(*index)
            .ok()
            .and_then(|i| keys.get(i.wrapping_sub(1)))
            .ok_or_else(bad)?;
        return Err(script::stored_error(*code, &[], key).unwrap_or_else(bad));
    }
    if let [-3] = ints.as_slice() {
        return Err(Error::ServerTimeOutOfRange);
    }
    let us = |i: i64| u64::try_from(i).map_err(|_| bad());
    let retry = |i: i64| {
        if i == -1 {
            Ok(None)
        } else {
            us(i).map(|r| Some(r * 1000))
        }
    };
    match ints.split_first() {
        Some((1, each)) if each.len() == 3 * quotas.len() => {
            let mut allowed = Allowed::unlimited();
            let mut bookings = Vec::with_capacity(quotas.len());
            for ((q, (key, _)), figures) in quotas.iter().zip(limits).zip(each.chunks(3)) {
                let own = q.level(us(figures[0])?).allowed();
                allowed = own.stricter(allowed);
                let receipt = Receipt {
                    after: us(figures[1])?,
                    g0: us(figures[2])?,
                };
                bookings.push(Booking::new(limiter, key, *q, cost, Some(receipt), own));
            }
            Ok(Ok(JointBooking {
                each: bookings,
                allowed,
                source: Source::Redis,
            }))
        }
        Some((0, [index, reset, wait, each @ ..])) if each.len() == 2 * quotas.len() => {
            let position = usize::try_from(*index).map_err(|_| bad())?;
            let q = quotas.get(position.wrapping_sub(1)).ok_or_else(bad)?;
            let mut denied = q.level(us(*reset)?).denied(retry(*wait)?);
            let mut answers = Vec::with_capacity(quotas.len());
            for (q, pair) in quotas.iter().zip(each.chunks(2)) {
                let level = q.level(us(pair[0])?);
                let own = match pair[1] {
                    -2 => Ok(level.allowed()),
                    wait => Err(level.denied(retry(wait)?)),
                };
                denied = denied.stricter(own);
                answers.push(own);
            }
            Ok(Err(JointDenial {
                denied,
                each: answers,
                source: Source::Redis,
            }))
        }
        _ => Err(bad()),
    }
}
