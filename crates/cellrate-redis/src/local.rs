//! The local limiter of [`FailurePolicy::Local`](super::FailurePolicy::Local): in-process
//! [`KeyedLimiter`]s, one per quota, each quota this process's share of the shared one.

use super::failure_policy::FailurePolicy;
use super::options::RedisOptions;
use super::stats::RedisStats;
use cellrate::KeyedLimiter;
use cellrate::Quota;
use cellrate::{all_of, Limit};
use cellrate::{Allowed, Denied, KeyedBucket, TickClock};
use core::time::Duration;
use std::sync::{Arc, Mutex};

/// The most distinct quotas the local fallback keeps a table for.
const MAX_TABLES: usize = 64;

/// What a request asked for, as the local fallback needs it.
pub(crate) enum Ask<'a> {
    /// `cost` tokens of one key under `quota`.
    One {
        key: &'a str,
        cost: u32,
        quota: Quota,
    },
    /// `cost` tokens of every `(key, quota)`, or none.
    AllOf {
        limits: &'a [(&'a str, Quota)],
        cost: u32,
    },
}

impl Ask<'_> {
    pub(crate) fn cost(&self) -> u32 {
        match self {
            Ask::One { cost, .. } | Ask::AllOf { cost, .. } => *cost,
        }
    }

    /// The smallest burst of the quotas asked (a cost above it can never pass).
    pub(crate) fn burst(&self) -> u32 {
        match self {
            Ask::One { quota, .. } => quota.burst(),
            Ask::AllOf { limits, .. } => limits
                .iter()
                .map(|(_, q)| q.burst())
                .min()
                .unwrap_or(u32::MAX),
        }
    }
}

/// A local decision: the answer, and for an all-or-nothing ask each key's own (in the order
/// asked; empty for one key).
pub(crate) struct LocalAnswer {
    pub(crate) decision: Result<Allowed, Denied>,
    pub(crate) each: Vec<Result<Allowed, Denied>>,
}

/// Each bucket's own answer after an all-or-nothing check of `cost`, as the script gives them:
/// admitted (`spent`), each bucket's level now; refused, each bucket judged alone, `Err` for
/// one that would refuse `cost` (its refusal, with the core's rounding and clock lag) and its
/// level now for one that would admit. A bucket that a peek finds short is asked with a
/// booking of zero wait: refused, it spends nothing; admitted meanwhile (it refilled), the
/// booking is cancelled at once.
fn own_answers(
    buckets: &[KeyedBucket<'_, TickClock>],
    cost: u32,
    spent: bool,
) -> Vec<Result<Allowed, Denied>> {
    let peek = |bucket: &KeyedBucket<'_, TickClock>| bucket.check_n(0);
    buckets
        .iter()
        .map(|bucket| {
            let level = peek(bucket);
            if spent || level.as_ref().is_ok_and(|a| a.remaining() >= cost) {
                return level;
            }
            match bucket.reserve(cost, Duration::ZERO) {
                Err(denied) => Err(denied),
                Ok(booking) => {
                    booking.cancel();
                    peek(bucket)
                }
            }
        })
        .collect()
}

/// The local tables, made at the first fallback.
pub(crate) struct Local {
    servers: u32,
    /// The limiter's own quota (as enforced) and what it becomes locally, if set.
    own: (Quota, Option<Quota>),
    max_keys: usize,
    start_empty: bool,
    tables: Mutex<Vec<(Quota, Arc<KeyedLimiter<String>>)>>,
}

impl Local {
    pub(crate) fn new(own: Quota, options: &RedisOptions) -> Local {
        let servers = match options.failure_policy {
            FailurePolicy::Local { servers } => servers,
            _ => 1,
        };
        Local {
            servers,
            own: (own, options.local_quota),
            max_keys: options.local_max_keys,
            start_empty: options.start_empty,
            tables: Mutex::new(Vec::new()),
        }
    }

    /// The local decision, or `None` when there is no table for a quota (it cannot be split,
    /// or too many quotas); for an all-or-nothing ask, also each key's own answer (see
    /// [`own_answers`]).
    pub(crate) fn check(&self, ask: &Ask<'_>) -> Option<LocalAnswer> {
        match ask {
            Ask::One { key, cost, quota } => Some(LocalAnswer {
                decision: self.table(quota)?.key(*key).check_n(*cost),
                each: Vec::new(),
            }),
            Ask::AllOf { limits, cost } => {
                let tables = limits
                    .iter()
                    .map(|(_, q)| self.table(q))
                    .collect::<Option<Vec<_>>>()?;
                let buckets: Vec<_> = tables
                    .iter()
                    .zip(limits.iter())
                    .map(|(table, (key, _))| table.key(*key))
                    .collect();
                let limits: Vec<(&dyn Limit, u32)> =
                    buckets.iter().map(|b| (b as &dyn Limit, *cost)).collect();
                let decision = all_of(&limits).check();
                let each = own_answers(&buckets, *cost, decision.is_ok());
                Some(LocalAnswer { decision, each })
            }
        }
    }

    /// The local tables' keys held, evictions and overflow denials, summed into `stats`.
    pub(crate) fn fill(&self, stats: &mut RedisStats) {
        let tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        for (_, table) in tables.iter() {
            let t = table.stats();
            stats.keys += t.keys;
            stats.idle_evictions += t.idle_evictions;
            stats.overflow_evictions += t.overflow_evictions;
            stats.overflow_denials += t.overflow_denials;
        }
    }

    /// The table for `quota`: its local share.
    fn table(&self, quota: &Quota) -> Option<Arc<KeyedLimiter<String>>> {
        let share = match self.own {
            (own, Some(local)) if own == *quota => local,
            _ => quota.split(self.servers).ok()?,
        };
        let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, table)) = tables.iter().find(|(q, _)| *q == share) {
            return Some(table.clone());
        }
        if tables.len() >= MAX_TABLES {
            return None;
        }
        let builder = KeyedLimiter::<String>::builder(share)
            .max_keys(self.max_keys)
            .start_empty(self.start_empty);
        let table = Arc::new(builder.try_build().ok()?);
        tables.push((share, table.clone()));
        Some(table)
    }
}
