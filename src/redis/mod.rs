//! A limit shared by many servers: the bucket lives in Redis (feature `redis`).
//!
//! [`RedisLimiter`] takes the same [`Quota`] and answers the same [`Allowed`]/[`Denied`] as the
//! in-process limiters, one key per bucket. Each decision is one server-side Lua script (one
//! round trip, EVALSHA with a transparent reload after NOSCRIPT) holding the same arithmetic as
//! [`Limiter`](crate::Limiter) in whole microseconds: the TAT is stored as an integer string,
//! written only when a request is allowed, with an expiry equal to the time until the bucket is
//! full again, so a missing key is a full bucket and idle clients cost no memory. Nothing is
//! written for a denial or a peek (except the first sight of a bucket under
//! [`RedisOptions::start_empty`]). Needs Redis 5 or later.
//!
//! ```no_run
//! use cellrate::redis::{RedisLimiter, RedisOptions, FailurePolicy};
//! use cellrate::Quota;
//!
//! # async fn serve() -> Result<(), cellrate::redis::Error> {
//! let options = RedisOptions::default().failure_policy(FailurePolicy::FailOpen);
//! let limiter =
//!     RedisLimiter::connect_with("redis://127.0.0.1:6379", Quota::per_second(50), options).await?;
//! match limiter.check_key_n("user:42", 1).await {
//!     Ok(allowed) => println!("go ahead; {} left", allowed.remaining()),
//!     Err(denied) => println!("429; retry after {:?}", denied.retry_after()),
//! }
//! println!("{:?}", limiter.stats());
//! # Ok(())
//! # }
//! ```
//!
//! # Time
//! By default every decision reads the Redis server's clock (`TIME` inside the script; this
//! needs effects replication, the default since Redis 5), so all app servers share one clock.
//! The `_at(now)` forms take the time from the caller instead, as [`Nanos`] since the Unix
//! epoch; it is rounded down to whole microseconds (which can only deny, never grant, compared
//! to the exact time). A quota whose emission interval is not a whole number of microseconds
//! is rounded up to the next one ([`RedisLimiter::quota`] tells the quota in force), so the
//! long-run rate never exceeds the configured one. For quotas on the microsecond grid and times
//! on it, every decision, `remaining`, `retry_after` and `reset_after` equals
//! [`Limiter::check_n_at`](crate::Limiter::check_n_at)'s.
//!
//! # Failures
//! The `try_*` calls return an [`Error`]; the `check_*` calls apply the limiter's
//! [`FailurePolicy`] and count every answer in [`Stats`]. Each call has a deadline; a call that
//! passes it may still have been applied, so it is reported as outcome unknown and never
//! retried. Reconnection happens in the background.
//!
//! # Keys and batches
//! Keys get a configurable prefix; a key's `{hash tag}` is kept, so related keys can share a
//! Cluster slot. [`RedisLimiter::check_many`] sends many independent decisions in one round
//! trip (one per slot on a Cluster); [`RedisLimiter::check_all_of_n`] spends in several buckets (a
//! user's, their org's) or in none, in one atomic script whose keys must share a slot on a
//! Cluster.

mod all_of;
mod batch;
mod conn;
mod error;
mod options;
mod policy;
mod script;

pub use error::Error;
pub use options::RedisOptions;
pub use policy::{FailurePolicy, Stats};

use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;
use conn::{Call, Conn};
use policy::{Counters, Fallback};
use redis::Script;
use script::MicroQuota;
use std::future::Future;
use std::sync::Arc;

/// A rate limiter whose buckets live in Redis, one per key, shared by every process that
/// connects to it with the same prefix. Cheap to clone: clones share the connection and
/// [`Stats`].
#[derive(Clone)]
pub struct RedisLimiter {
    conn: Conn,
    quota: MicroQuota,
    options: RedisOptions,
    decide: Arc<Script>,
    refund: Arc<Script>,
    all_of: Arc<Script>,
    counters: Arc<Counters>,
}

impl RedisLimiter {
    /// Connects to the Redis at `url` (such as `redis://127.0.0.1:6379`) with default
    /// [`RedisOptions`]. Fails within the connection timeout if Redis is unreachable.
    pub async fn connect(url: &str, quota: Quota) -> Result<RedisLimiter, Error> {
        RedisLimiter::connect_with(url, quota, RedisOptions::default()).await
    }

    /// [`RedisLimiter::connect`] with options.
    pub async fn connect_with(
        url: &str,
        quota: Quota,
        options: RedisOptions,
    ) -> Result<RedisLimiter, Error> {
        let quota = MicroQuota::new(&quota)?;
        let conn = Conn::single(url, &options).await?;
        Ok(RedisLimiter::with_conn(conn, quota, options))
    }

    /// A limiter that connects in the background: returns at once, even when Redis is down,
    /// and calls made before the connection is up wait at most their deadline. Must be called
    /// within a Tokio runtime.
    pub fn connect_lazy(
        url: &str,
        quota: Quota,
        options: RedisOptions,
    ) -> Result<RedisLimiter, Error> {
        let quota = MicroQuota::new(&quota)?;
        let conn = Conn::single_lazy(url, &options)?;
        Ok(RedisLimiter::with_conn(conn, quota, options))
    }

    /// Connects to a Redis Cluster through the given seed nodes. Keys are routed to the node
    /// that owns their slot; batches are pipelined per slot.
    pub async fn connect_cluster(
        urls: &[&str],
        quota: Quota,
        options: RedisOptions,
    ) -> Result<RedisLimiter, Error> {
        let quota = MicroQuota::new(&quota)?;
        let conn = Conn::cluster(urls, &options).await?;
        Ok(RedisLimiter::with_conn(conn, quota, options))
    }

    fn with_conn(conn: Conn, quota: MicroQuota, options: RedisOptions) -> RedisLimiter {
        RedisLimiter {
            conn,
            quota,
            options,
            decide: Arc::new(script::decide_script()),
            refund: Arc::new(script::refund_script()),
            all_of: Arc::new(all_of::all_of_script()),
            counters: Arc::new(Counters::default()),
        }
    }

    /// The quota in force: the one given, with its emission interval rounded up to whole
    /// microseconds.
    pub fn quota(&self) -> Quota {
        self.quota.effective()
    }

    /// The limiter's options.
    pub fn options(&self) -> &RedisOptions {
        &self.options
    }

    /// Counts of the answers given by the `check_*` calls so far (shared by clones).
    pub fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    /// The Redis key of a bucket: the prefix, then `key` unchanged (hash tag included).
    pub fn redis_key(&self, key: &str) -> String {
        let mut full = String::with_capacity(self.options.key_prefix.len() + key.len());
        full.push_str(&self.options.key_prefix);
        full.push_str(key);
        full
    }

    /// The SHA1 of the decision script, as EVALSHA names it (for example to drive the same
    /// script from `redis-benchmark`). Its arguments are documented in the crate source
    /// (`src/redis/script.rs`).
    pub fn decision_script_sha1(&self) -> &str {
        self.decide.get_hash()
    }

    /// Spends one token of `key`'s bucket, on the server's clock; the failure policy applies.
    pub async fn check_key(&self, key: &str) -> Result<Allowed, Denied> {
        self.check_key_n(key, 1).await
    }

    /// Spends `cost` tokens of `key`'s bucket if all are there, on the server's clock. When
    /// Redis gives no decision the [`FailurePolicy`] answers; either way the answer is counted
    /// in [`Stats`]. `cost == 0` is a peek; `cost > burst` is denied with no retry time.
    pub async fn check_key_n(&self, key: &str, cost: u32) -> Result<Allowed, Denied> {
        let outcome = self.decide_one(key, cost, &self.quota, None).await;
        self.settle(outcome, cost, self.quota.burst)
    }

    /// [`RedisLimiter::check_key_n`] under another quota for this call only (for example a
    /// per-plan limit); the bucket is the same key.
    pub async fn check_key_n_with_quota(
        &self,
        key: &str,
        cost: u32,
        quota: &Quota,
    ) -> Result<Allowed, Denied> {
        let outcome = match MicroQuota::new(quota) {
            Ok(q) => self.decide_one(key, cost, &q, None).await,
            Err(e) => Err(e),
        };
        self.settle(outcome, cost, quota.burst())
    }

    /// The decision for `cost` tokens of `key` at `now` (nanoseconds since the Unix epoch,
    /// rounded down to whole microseconds), without a failure policy: Redis's answer or why
    /// there is none. On the microsecond grid it equals
    /// [`Limiter::check_n_at`](crate::Limiter::check_n_at) on the same schedule.
    pub async fn try_check_key_n_at(
        &self,
        key: &str,
        cost: u32,
        now: Nanos,
    ) -> Result<Result<Allowed, Denied>, Error> {
        self.decide_one(key, cost, &self.quota, Some(now)).await
    }

    /// [`RedisLimiter::try_check_key_n_at`] on the server's clock.
    pub async fn try_check_key_n(
        &self,
        key: &str,
        cost: u32,
    ) -> Result<Result<Allowed, Denied>, Error> {
        self.decide_one(key, cost, &self.quota, None).await
    }

    /// The decision under `quota` for this call only, on the server's clock.
    pub async fn try_check_key_n_with_quota(
        &self,
        key: &str,
        cost: u32,
        quota: &Quota,
    ) -> Result<Result<Allowed, Denied>, Error> {
        self.decide_one(key, cost, &MicroQuota::new(quota)?, None)
            .await
    }

    /// [`RedisLimiter::try_check_key_n_with_quota`] at `now` (ns since the Unix epoch).
    pub async fn try_check_key_n_with_quota_at(
        &self,
        key: &str,
        cost: u32,
        quota: &Quota,
        now: Nanos,
    ) -> Result<Result<Allowed, Denied>, Error> {
        self.decide_one(key, cost, &MicroQuota::new(quota)?, Some(now))
            .await
    }

    /// Gives back `n` tokens of `key` on the server's clock: a request admitted but not
    /// carried out. As in the core, the level never rises above the capacity and a full
    /// bucket stays as it is. A refund that times out is not retried.
    pub async fn try_refund_key_n(&self, key: &str, n: u32) -> Result<(), Error> {
        self.refund_key_n(key, n, None).await
    }

    /// [`RedisLimiter::try_refund_key_n`] at `now` (ns since the Unix epoch).
    pub async fn try_refund_key_n_at(&self, key: &str, n: u32, now: Nanos) -> Result<(), Error> {
        self.refund_key_n(key, n, Some(now)).await
    }

    async fn refund_key_n(&self, key: &str, n: u32, now: Option<Nanos>) -> Result<(), Error> {
        let now_us = now.map(script::micros_since_epoch).transpose()?;
        let call = Call {
            key: self.redis_key(key),
            args: self.args(&self.quota, n, now_us),
        };
        self.deadline(self.conn.invoke(&self.refund, &call)).await?;
        Ok(())
    }

    async fn decide_one(
        &self,
        key: &str,
        cost: u32,
        quota: &MicroQuota,
        now: Option<Nanos>,
    ) -> Result<Result<Allowed, Denied>, Error> {
        let now_us = now.map(script::micros_since_epoch).transpose()?;
        let call = Call {
            key: self.redis_key(key),
            args: self.args(quota, cost, now_us),
        };
        let reply = self.deadline(self.conn.invoke(&self.decide, &call)).await?;
        script::decode_decision(&reply, quota)
    }

    fn args(&self, quota: &MicroQuota, n: u32, now_us: Option<u64>) -> [i64; 6] {
        let start_empty = self.options.start_empty;
        script::args(quota, n, now_us, start_empty, self.options.keep_ms())
    }

    /// `call`, or [`Error::Timeout`] once the deadline passes (the call is dropped, not retried).
    async fn deadline<T>(
        &self,
        call: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, Error> {
        match tokio::time::timeout(self.options.deadline, call).await {
            Ok(result) => Ok(result?),
            Err(_) => Err(Error::Timeout(self.options.deadline)),
        }
    }

    fn fallback(&self) -> Fallback {
        Fallback {
            policy: self.options.failure_policy,
            retry_after: self.options.failure_retry_after,
        }
    }

    /// The answer to give for `outcome`, counted.
    fn settle(
        &self,
        outcome: Result<Result<Allowed, Denied>, Error>,
        cost: u32,
        burst: u32,
    ) -> Result<Allowed, Denied> {
        match outcome {
            Ok(decision) => {
                self.counters.record(&decision);
                decision
            }
            Err(e) => self.fallback().answer(&e, cost, burst, &self.counters),
        }
    }
}

impl core::fmt::Debug for RedisLimiter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RedisLimiter")
            .field("quota", &self.quota())
            .field("options", &self.options)
            .field("stats", &self.stats())
            .finish()
    }
}
