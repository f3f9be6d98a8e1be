//! Where buckets live: in this process (the default) or in Redis (`--redis`), behind one
//! verb, [`Store::decide`]: spend in every bucket of a request or in none, and answer each
//! bucket's own figures.

pub(crate) mod embedded;
pub(crate) mod redis;

use crate::settings::Settings;
use cellrate::{Allowed, Denied, Quota};
use embedded::{SharedClock, Table};

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
    },
    Redis(redis::RedisStore),
}

impl Store {
    /// The local store, on `clock`.
    pub fn local(settings: &Settings, clock: SharedClock) -> Store {
        Store::Local {
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
