//! Buckets in Redis (`--redis`), shared by every server that connects with the same prefix,
//! through `cellrate-redis`: one Lua script decides all of a request's buckets at once.
//!
//! # One slot per request
//! Every key of a domain carries the domain as its hash tag (`{edge}`), so that on a Redis
//! Cluster all the buckets of one request live in one slot and the all-or-nothing script runs
//! on one node in one round trip. The cost: a domain's buckets live on one node; deployments
//! that outgrow one node split their traffic over several domains.
//!
//! # Costs
//! The script spends one cost in every key. A request whose descriptors all cost the same
//! (the usual case: the request's `hits_addend`) is one script; one whose descriptors cost
//! differently is one script per cost, and when a later one refuses, the bookings of the
//! earlier ones are given back (the rollback of the in-process form).

use super::embedded::judge;
use super::Spend;
use crate::settings::{RedisFailure, RedisType, Settings};
use cellrate::{Allowed, Denied, Quota};
use cellrate_redis::{key_part, FailurePolicy, JointBooking, RedisLimiter, RedisOptions};
use std::time::Duration;

/// The Redis connection and how keys are named.
pub(crate) struct RedisStore {
    limiter: RedisLimiter,
}

impl RedisStore {
    /// Connects as `settings` say (`--redis`, `--redis-type`, `--redis-failure`, ...).
    pub async fn connect(settings: &Settings) -> Result<RedisStore, String> {
        let Some(url) = settings.redis.as_deref() else {
            return Err("no --redis URL".to_owned());
        };
        let policy = match settings.redis_failure {
            RedisFailure::Open => FailurePolicy::FailOpen,
            RedisFailure::Closed => FailurePolicy::FailClosed,
            RedisFailure::Local => FailurePolicy::Local {
                servers: settings.redis_servers,
            },
        };
        let options = RedisOptions::default()
            .key_prefix(settings.redis_prefix.clone())
            .failure_policy(policy)
            .deadline(Duration::from_millis(settings.redis_deadline_ms));
        // The limiter's own quota is never used: every call gives the rule's.
        let quota = Quota::per_second(1);
        let limiter = match settings.redis_type {
            // Starts even while Redis is down: the failure policy answers until it is back.
            RedisType::Single => RedisLimiter::connect_lazy(url, quota, options),
            RedisType::Cluster => {
                let seeds: Vec<&str> = url.split(',').map(str::trim).collect();
                RedisLimiter::connect_cluster(&seeds, quota, options).await
            }
            RedisType::Sentinel => {
                let mut parts = url.split(',').map(str::trim);
                let service = parts.next().unwrap_or_default();
                let sentinels: Vec<&str> = parts.collect();
                if service.is_empty() || sentinels.is_empty() {
                    return Err(
                        "--redis-type sentinel takes SERVICE,SENTINEL_URL[,SENTINEL_URL...]"
                            .to_owned(),
                    );
                }
                RedisLimiter::connect_sentinel(
                    &sentinels,
                    service,
                    "redis://primary",
                    quota,
                    options,
                )
                .await
            }
        };
        limiter
            .map(|limiter| RedisStore { limiter })
            .map_err(|e| format!("cannot connect to Redis at {url}: {e}"))
    }

    /// The key prefix of the buckets of rule `id` (`domain` NUL `path`) under `quota`: the
    /// domain as the hash tag, the rule and the quota, each in a form safe for a key name.
    pub fn prefix(&self, id: &str, quota: &Quota) -> String {
        let (domain, path) = id.split_once('\0').unwrap_or((id, ""));
        format!(
            "{{{}}}{}:{}x{}:",
            key_part(domain.as_bytes()),
            key_part(path.as_bytes()),
            quota.emission_interval().as_nanos(),
            quota.burst()
        )
    }

    fn key(spend: &Spend<'_>) -> String {
        let prefix = spend.buckets.redis_prefix().unwrap_or_default();
        format!("{prefix}{}", key_part(spend.key.as_bytes()))
    }

    /// Spends in every bucket or in none (module docs).
    pub async fn all_or_nothing(
        &self,
        spends: &[Spend<'_>],
        answers: &mut Vec<Result<Allowed, Denied>>,
    ) -> bool {
        answers.clear();
        answers.resize(spends.len(), Ok(Allowed::unlimited()));
        let keys: Vec<String> = spends.iter().map(RedisStore::key).collect();
        let mut costs: Vec<u32> = spends.iter().map(|s| s.cost).collect();
        costs.sort_unstable();
        costs.dedup();
        let mut booked: Vec<JointBooking> = Vec::with_capacity(costs.len());
        for cost in costs {
            let members: Vec<usize> = (0..spends.len())
                .filter(|&i| spends[i].cost == cost)
                .collect();
            let limits: Vec<(&str, Quota)> = members
                .iter()
                .map(|&i| (keys[i].as_str(), spends[i].buckets.quota))
                .collect();
            match self.limiter.reserve_all_of_n(&limits, cost).await {
                Ok(booking) => {
                    for (&i, each) in members.iter().zip(booking.each()) {
                        answers[i] = Ok(each.allowed());
                    }
                    booked.push(booking);
                }
                Err(denial) => {
                    for booking in booked.into_iter().rev() {
                        // A give-back that fails leaves tokens spent: never an admission.
                        let _ = booking.cancel().await;
                    }
                    let refused: Vec<usize> = members;
                    for (&i, each) in refused.iter().zip(denial.each()) {
                        answers[i] = *each;
                    }
                    for i in 0..spends.len() {
                        if spends[i].cost != cost {
                            answers[i] = self.alone(&keys[i], &spends[i]).await;
                        }
                    }
                    return false;
                }
            }
        }
        // The spends stay: dropping a booking keeps it.
        drop(booked);
        true
    }

    /// Each bucket's answer alone, spending nothing.
    pub async fn peek(&self, spends: &[Spend<'_>], answers: &mut Vec<Result<Allowed, Denied>>) {
        for spend in spends {
            let key = RedisStore::key(spend);
            answers.push(self.alone(&key, spend).await);
        }
    }

    async fn alone(&self, key: &str, spend: &Spend<'_>) -> Result<Allowed, Denied> {
        let quota = &spend.buckets.quota;
        let in_force = RedisLimiter::quota_in_force(quota).unwrap_or(*quota);
        match self.limiter.check_key_n_with_quota(key, 0, quota).await {
            Ok(level) => judge(&in_force, level.reset_after(), spend.cost),
            Err(denied) => Err(denied),
        }
    }

    /// The limiter, for its counts.
    pub fn limiter(&self) -> &RedisLimiter {
        &self.limiter
    }
}
