//! `CL.THROTTLE` buckets in Redis (`--redis`), shared by every server given the same Redis
//! and prefix, through `cellrate-redis`.
//!
//! A call's key names its bucket `throttle:KEY` (the key through `key_part`: kept as it is if
//! it is short plain text, a digest otherwise, so no client picks a Cluster slot or grows key
//! names), and its rate is the quota of a `*_with_quota` call. There a quota is part of a
//! bucket's name: a key called with other parameters is another bucket, which starts full,
//! while the bucket of the old parameters is forgotten by Redis once full. That is where this
//! storage differs from redis-cell, which keeps the stored time under the new parameters.
//! Redis also holds emission intervals in whole microseconds (rounded up), and decides on its
//! own clock: the figures are those of the quota in force there.

use super::redis::RedisStore;
use crate::throttle::{Decision, Rate, Reply};
use cellrate_redis::{key_part, RedisLimiter};

impl RedisStore {
    /// Spends `quantity` in `key`'s bucket under `rate`, or refuses: the reply.
    pub async fn throttle(&self, key: &[u8], rate: &Rate, quantity: u64) -> Reply {
        let name = format!("throttle:{}", key_part(key));
        let in_force = Rate {
            quota: RedisLimiter::quota_in_force(&rate.quota).unwrap_or(rate.quota),
        };
        let limiter = self.limiter();
        let decision = match u32::try_from(quantity) {
            Ok(cost) => Decision::of(
                limiter
                    .check_key_n_with_quota(&name, cost, &rate.quota)
                    .await,
            ),
            // More than any bucket holds: refused for good, nothing spent.
            Err(_) => {
                let level = limiter.check_key_n_with_quota(&name, 0, &rate.quota).await;
                Decision {
                    limited: true,
                    retry_after_ns: None,
                    ..Decision::of(level)
                }
            }
        };
        Reply::new(&in_force, decision)
    }
}
