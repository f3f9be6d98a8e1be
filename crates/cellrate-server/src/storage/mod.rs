//! Where buckets live: in this process (the default) or in Redis (`--redis`), behind two
//! verbs: [`Store::decide`] for RLS (spend in every bucket of a request or in none, and answer
//! each bucket's own figures) and [`Store::throttle`] for `CL.THROTTLE` (one key's bucket,
//! redis-cell's reply).

pub(crate) mod embedded;
pub(crate) mod redis;
mod redis_throttle;
pub(crate) mod throttle;

use crate::settings::Settings;
use crate::throttle::{Rate, Reply};
use cellrate::{Allowed, Denied, Quota};
use embedded::{SharedClock, Table};
use throttle::ThrottleTable;

/// The buckets of one rule (or of one per-call override): a table in this process, or a key
/// prefix in Redis. Its quota is part of what it is: a changed quota is another `Buckets`.
pub(crate) struct Buckets {
    pub quota: Quota,
    place: Place,
}

enum Place {
    Local(Box<Table>),
    Redis { prefix: String },
}

/// One bucket of a request and what the request spends in it.
#[derive(Clone)]
pub(crate) struct Spend<'a> {
    pub buckets: &'a Buckets,
    /// The bucket's key within its rule (the descriptor's values that tell buckets apart).
    pub key: &'a str,
    pub cost: u32,
}

/// The storage of a server.
pub(crate) enum Store {
    Local {
        clock: SharedClock,
        max_keys: usize,
        overflow: crate::settings::Overflow,
        throttles: ThrottleTable,
    },
    Redis(redis::RedisStore),
}

impl Store {
    /// The local store, on `clock`.
    pub fn local(settings: &Settings, clock: SharedClock) -> Store {
        let throttle_keys = usize::try_from(settings.throttle_max_keys).unwrap_or(usize::MAX);
        Store::Local {
            throttles: ThrottleTable::new(throttle_keys, settings.overflow, clock.clone()),
            clock,
            max_keys: usize::try_from(settings.max_keys).unwrap_or(usize::MAX),
            overflow: settings.overflow,
        }
    }

    /// New buckets for `quota`; `id` names them among every rule's (the Redis key prefix).
    pub fn buckets(&self, quota: Quota, id: &str) -> Buckets {
        let place = match self {
            Store::Local {
                clock,
                max_keys,
                overflow,
                ..
            } => Place::Local(Box::new(embedded::table(
                quota,
                *max_keys,
                *overflow,
                clock.clone(),
            ))),
            Store::Redis(redis) => Place::Redis {
                prefix: redis.prefix(id, &quota),
            },
        };
        Buckets { quota, place }
    }

    /// Spends every `spends[i].cost` in its bucket, or nothing, and puts each bucket's own
    /// answer in `answers`; whether the request was admitted.
    pub async fn decide(
        &self,
        spends: &[Spend<'_>],
        answers: &mut Vec<Result<Allowed, Denied>>,
    ) -> bool {
        match self {
            Store::Local { .. } => embedded::all_or_nothing(spends, answers),
            Store::Redis(redis) => redis.all_or_nothing(spends, answers).await,
        }
    }

    /// Spends `quantity` in the throttle bucket of `key` under `rate`, or refuses: the reply
    /// of `CL.THROTTLE`.
    pub async fn throttle(&self, key: &[u8], rate: &Rate, quantity: u64) -> Reply {
        match self {
            Store::Local { throttles, .. } => throttles.throttle(key, rate, quantity),
            Store::Redis(redis) => redis.throttle(key, rate, quantity).await,
        }
    }

    /// The throttle table, if the buckets are in this process.
    pub fn throttles(&self) -> Option<&ThrottleTable> {
        match self {
            Store::Local { throttles, .. } => Some(throttles),
            Store::Redis(_) => None,
        }
    }

    /// Each bucket's answer alone, spending nothing (the status of a request refused before
    /// its buckets were asked).
    pub async fn peek(&self, spends: &[Spend<'_>], answers: &mut Vec<Result<Allowed, Denied>>) {
        answers.clear();
        match self {
            Store::Local { .. } => answers.extend(spends.iter().map(embedded::alone)),
            Store::Redis(redis) => redis.peek(spends, answers).await,
        }
    }
}

impl Buckets {
    /// The local table, if the buckets are in this process.
    pub fn table(&self) -> Option<&Table> {
        match &self.place {
            Place::Local(table) => Some(table),
            Place::Redis { .. } => None,
        }
    }

    /// The Redis key prefix, if the buckets are in Redis.
    pub fn redis_prefix(&self) -> Option<&str> {
        match &self.place {
            Place::Local(_) => None,
            Place::Redis { prefix } => Some(prefix),
        }
    }
}
