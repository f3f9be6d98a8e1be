//! The local deny cache ([`RedisOptions::deny_cache`](super::RedisOptions::deny_cache)): the
//! TATs of keys Redis refused, dated on this process's monotonic clock, so that requests those
//! keys cannot pass are refused without a round trip.
//!
//! Exactness: the cache never admits; a request it does not refuse goes to Redis. Redis decided
//! at some instant before its reply arrived, so `arrival + reset_after` is at or after the true
//! TAT, by at most the reply's latency: a cached refusal may outlast Redis's by that much (a
//! fraction of a millisecond on a LAN), or by more when tokens came back in another way (a
//! refund from another process, a deleted key).

use super::script::MicroQuota;
use crate::micros::Level;
use cellrate::Denied;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::time::Instant;

/// Shards, so that callers on different keys seldom share a lock.
const SHARDS: usize = 16;

pub(crate) struct DenyCache {
    shards: Vec<Mutex<HashMap<String, u64>>>,
    per_shard: usize,
    hasher: RandomState,
    epoch: Instant,
}

impl DenyCache {
    /// A cache of at most about `max_keys` keys.
    pub(crate) fn new(max_keys: usize) -> DenyCache {
        DenyCache {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            per_shard: max_keys.div_ceil(SHARDS).max(1),
            hasher: RandomState::new(),
            epoch: Instant::now(),
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn shard(&self, key: &str) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        let i = (self.hasher.hash_one(key) % SHARDS as u64) as usize;
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The refusal of `cost` tokens of `key` under `quota`, if the cached TAT says so.
    pub(crate) fn refuse(&self, key: &str, cost: u32, quota: &MicroQuota) -> Option<Denied> {
        if cost == 0 || cost > quota.burst {
            return None;
        }
        let tat = *self.shard(key).get(key)?;
        let now = self.now_ns();
        let ahead = tat.checked_sub(now)?;
        let interval = quota.interval_us * 1000;
        let depth = interval * u64::from(quota.burst);
        let need = ahead.checked_add(u64::from(cost) * interval)?;
        (need > depth).then(|| {
            let level = Level {
                reset_after_ns: ahead,
                depth_ns: depth,
                interval_ns: interval,
            };
            level.denied(Some(need - depth))
        })
    }

    /// Remembers the TAT Redis's refusal of `key` implies, if it would refuse a token later.
    pub(crate) fn remember(&self, key: &str, denied: &Denied, quota: &MicroQuota) {
        let ahead = u64::try_from(denied.reset_after().as_nanos()).unwrap_or(u64::MAX);
        let interval = quota.interval_us * 1000;
        if ahead.saturating_add(interval) <= interval * u64::from(quota.burst) {
            return; // a single token passes now: nothing to refuse
        }
        let tat = self.now_ns().saturating_add(ahead);
        let mut shard = self.shard(key);
        if shard.len() >= self.per_shard && !shard.contains_key(key) {
            let now = self.now_ns();
            shard.retain(|_, &mut t| t > now);
            if shard.len() >= self.per_shard {
                return;
            }
        }
        shard.insert(key.to_owned(), tat);
    }

    /// Forgets `key` (its tokens were given back).
    pub(crate) fn forget(&self, key: &str) {
        self.shard(key).remove(key);
    }
}
