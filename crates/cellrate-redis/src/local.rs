//! The local limiter of [`FailurePolicy::Local`](super::FailurePolicy::Local): in-process
//! [`KeyedLimiter`]s, one per quota, each quota this process's share of the shared one.

use super::failure_policy::FailurePolicy;
use super::options::RedisOptions;
use super::stats::RedisStats;
use cellrate::KeyedLimiter;
use cellrate::Quota;
use cellrate::{all_of, Limit};
use cellrate::{Allowed, Denied};
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
    /// or too many quotas).
    pub(crate) fn check(&self, ask: &Ask<'_>) -> Option<Result<Allowed, Denied>> {
        match ask {
            Ask::One { key, cost, quota } => Some(self.table(quota)?.check_key_n(*key, *cost)),
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
                let limits: Vec<&dyn Limit> = buckets.iter().map(|b| b as &dyn Limit).collect();
                Some(all_of(&limits).check_n(*cost))
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
            _ => quota.try_split(self.servers).ok()?,
        };
        let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, table)) = tables.iter().find(|(q, _)| *q == share) {
            return Some(table.clone());
        }
        if tables.len() >= MAX_TABLES {
            return None;
        }
        let builder = KeyedLimiter::<String>::builder(share).max_keys(self.max_keys);
        let builder = if self.start_empty {
            builder.start_empty()
        } else {
            builder
        };
        let table = Arc::new(builder.try_build().ok()?);
        tables.push((share, table.clone()));
        Some(table)
    }
}
