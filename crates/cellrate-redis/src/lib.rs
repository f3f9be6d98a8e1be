//! A limit shared by many servers: [`cellrate`]'s buckets kept in Redis.
//!
//! [`RedisLimiter`] takes the same [`Quota`] and answers the same [`Allowed`]/[`Denied`] as the
//! in-process limiters, one key per bucket. Each decision is one server-side Lua script (one
//! round trip, EVALSHA with a transparent reload after NOSCRIPT) holding the same arithmetic as
//! [`Limiter`](cellrate::Limiter) in whole microseconds: the TAT is stored as an integer string,
//! written only when a request is allowed, with an expiry equal to the time until the bucket is
//! full again, so a missing key is a full bucket and idle clients cost no memory. Nothing is
//! written for a denial or a peek (except the first sight of a bucket under
//! [`RedisOptions::start_empty`]). Needs Redis 5 or later; tested against redis-server 7.0
//! (alone, a replica pair failed over, Sentinel, a Cluster resharded under load, TLS).
//!
//! | Job | Type |
//! |---|---|
//! | The shared limiter | [`RedisLimiter`] (`connect`, `connect_with`): `check_key`, `check_key_n`, `check_many` |
//! | How to connect, when Redis does not answer | [`RedisOptions`], [`FailurePolicy`], [`ClientIdentity`] (TLS), [`ErrorHook`] |
//! | Several keys, all or nothing | `check_all_of_n`, `reserve_all_of_n`: [`JointBooking`] or [`JointDenial`] |
//! | Book now, go later | `reserve_key_n`: a [`Booking`] |
//! | Counts and the most denied keys | `stats()`: [`RedisStats`]; `top_denied` |
//! | A health check of the servers' memory settings | `memory_settings()`: [`MemorySettings`], [`MemoryRisk`] |
//! | Key names | [`key_part`], [`MAX_KEY_LEN`], [`MAX_PART_LEN`] |
//! | Who answered: Redis, the fallback, the policy, or a fault | `check_key_n_answer`, `reserve_key_n_answer`: [`Answer`], [`Source`] |
//! | What went wrong, and what mends it | [`Error`], [`Error::remedy`] |
//!
//! ```no_run
//! use cellrate::Quota;
//! use cellrate_redis::{FailurePolicy, RedisLimiter, RedisOptions};
//!
//! # async fn serve() -> Result<(), cellrate_redis::Error> {
//! let url = "redis://127.0.0.1:6379";
//! // While Redis is unreachable, decide locally with a quarter of the quota (4 servers).
//! let options = RedisOptions::default().failure_policy(FailurePolicy::Local { servers: 4 });
//! let limiter = RedisLimiter::connect_with(url, Quota::per_second(50), options).await?;
//! match limiter.check_key_n("user:42", 1).await {
//!     Ok(allowed) => println!("go ahead; {} left", allowed.remaining()),
//!     Err(denied) => println!("429; retry after {:?}", denied.retry_after()),
//! }
//! // The user's bucket and their org's, spent together or not at all, in one atomic script.
//! let limits = [("{acme}:u42", Quota::per_second(50)), ("{acme}:org", Quota::per_second(500))];
//! let both = limiter.check_all_of_n(&limits, 1).await;
//! println!("{both:?} {:?}", limiter.stats());
//! # Ok(())
//! # }
//! ```
//!
//! # Time
//! By default every decision reads the Redis server's clock (`TIME` inside the script; this
//! needs effects replication, the default since Redis 5), so all app servers share one clock.
//! The `_at(now)` forms take the time from the caller instead, as [`Nanos`](cellrate::Nanos)
//! since the Unix epoch. A time off the microsecond grid is decided at its whole microsecond
//! rounded down and charged from it rounded up, which never admits what the exact limiter
//! would refuse (a proof in docs/design.md). Keys written at a caller's time live
//! [`RedisOptions::expiry_margin`] (1 s) longer, so that a caller whose clock lags the writer's
//! does not find them gone early. A quota whose emission interval is not a whole number of
//! microseconds is rounded up to the next one ([`RedisLimiter::quota`] tells the quota in
//! force), so the long-run rate never exceeds the configured one. For quotas on the microsecond
//! grid and times on it, every decision, `remaining`, `retry_after` and `reset_after` equals
//! those of [`Limiter::at`](cellrate::Limiter::at)`(now).check_n(cost)`.
//!
//! # Failures
//! The `try_*` calls return an [`Error`]; the `check_*` calls apply the limiter's
//! [`FailurePolicy`] (fail open, fail closed, or a local limiter with this server's share of
//! the quota) and count every answer in [`RedisStats`]. Each call has a deadline; a call that passes
//! it after being sent may still have been applied, so it is reported as outcome unknown and
//! never retried. A connection that falls silent, drops, or reaches a server that cannot take
//! writes (`READONLY` after a failover behind one name) is replaced, and every new connection
//! must reach a primary. A server that stops answering scripts in time trips a breaker; while
//! it is down or tripped, calls fail at once without being sent, and background attempts,
//! backing off, bring it back. Mistakes of the caller or the deployment ([`Error::is_usage`]: a
//! key holding something other than a TAT, keys of different Cluster slots, a quota the script
//! cannot hold, an empty prefix, a user the ACL denies a command the scripts need) are refused
//! under every policy, never admitted; [`Error::remedy`] says what mends each.
//! [`RedisLimiter::check_key_n_answer`], [`RedisLimiter::reserve_key_n_answer`] and the joint
//! answers' `source()` tell who answered ([`Source`]): Redis, the local fallback, the policy
//! without a bucket, or a fault, which a server should answer as its own (a 5xx), not as a
//! refusal. TLS
//! (`rediss://`, [`RedisOptions::tls_root_certificates`]), Cluster
//! ([`RedisLimiter::connect_cluster`]) and Sentinel ([`RedisLimiter::connect_sentinel`]) are
//! supported. What a failover, a restart or an eviction policy can cost is in docs/design.md,
//! section 7. Every connection reads the server's `maxmemory` and `maxmemory-policy`: a policy
//! that can evict the limiter's keys (`allkeys-*`, and `volatile-*` since every bucket has an
//! expiry; each bucket evicted is full again, a burst given away) is logged and counted in
//! [`RedisStats::evicting_servers`], and [`RedisLimiter::memory_settings`] reads them on demand
//! for a health check ([`MemoryRisk`]). Under `noeviction` at the limit, refusals (which write
//! nothing) are still Redis's, and admissions, refused for memory (`OOM`), are the failure
//! policy's to answer, counted in [`RedisStats::oom`]. During a Cluster slot migration, calls
//! are decided by Redis: single keys, batches, and all-or-nothing calls on keys no node holds
//! yet (one whose keys the two nodes split waits, within its deadline, for `MIGRATE` to bring
//! them together).
//!
//! # Giving tokens back
//! [`RedisLimiter::reserve_key_n`] answers a [`Booking`]: [`Booking::cancel`] gives the tokens
//! back and [`Booking::settle`] corrects the cost, under the quota of the spend, and never hands
//! back more than the request still holds (not another request's tokens).
//!
//! # Keys and batches
//! Keys get a configurable prefix, which must be the limiter's alone; a key's `{hash tag}` is
//! kept, so related keys can share a Cluster slot. A key longer than [`MAX_KEY_LEN`] bytes is
//! replaced by its tag and a digest; put text a client chose through [`key_part`], so that it
//! can neither choose a slot nor grow key names. [`RedisLimiter::check_many`] sends many
//! independent decisions as pipelines of [`RedisOptions::batch_chunk`] calls (per node on a
//! Cluster); [`RedisLimiter::check_all_of_n`] spends in several buckets (a user's, their
//! org's) or in none, in one atomic script whose keys must share a slot on a Cluster, and
//! [`RedisLimiter::reserve_all_of_n`] tells each key's own figures. [`RedisOptions::deny_cache`]
//! refuses keys Redis just refused without a round trip.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod all_of;
mod batch;
mod booking;
mod cluster;
mod conn;
mod connector;
mod deny_cache;
mod error;
mod failure_policy;
mod health;
mod joint;
mod key_name;
mod local;
mod memory;
mod micros;
mod node;
mod node_script;
mod observe;
mod options;
mod policy;
mod reserve;
mod script;
mod sentinel;
mod single;
mod slot_map;
mod source;
mod stats;
mod top_keys;

pub use booking::Booking;
pub use error::Error;
pub use failure_policy::FailurePolicy;
pub use joint::{JointBooking, JointDenial};
pub use key_name::{key_part, MAX_KEY_LEN, MAX_PART_LEN};
pub use memory::{MemoryRisk, MemorySettings};
pub use options::{ClientIdentity, ErrorHook, RedisOptions};
pub use source::{Answer, Source};
pub use stats::RedisStats;

use crate::top_keys::TopKeys;
use cellrate::Quota;
use cellrate::{Allowed, Denied};
use conn::Conn;
use deny_cache::DenyCache;
use local::{Ask, Local};
use node_script::Pace;
use policy::Counters;
use redis::Script;
use script::MicroQuota;
use std::borrow::Cow;
use std::sync::Arc;

/// A rate limiter whose buckets live in Redis, one per key, shared by every process that
/// connects to it with the same prefix. Cheap to clone: clones share the connection, the
/// local fallback and deny cache, and [`RedisStats`].
#[derive(Clone)]
pub struct RedisLimiter {
    conn: Conn,
    quota: MicroQuota,
    /// Shared: a [`Booking`] keeps a clone of the limiter.
    options: Arc<RedisOptions>,
    decide: Arc<Script>,
    settle: Arc<Script>,
    all_of: Arc<Script>,
    counters: Arc<Counters>,
    local: Arc<Local>,
    deny: Option<Arc<DenyCache>>,
    /// Set by [`RedisLimiter::named`]: the label of its metrics.
    name: Option<Arc<observe::Name>>,
    /// Set by [`RedisLimiter::track_top_denied`]: the most refused keys.
    top_denied: Option<Arc<TopKeys>>,
}

impl RedisLimiter {
    /// Connects to the Redis at `url` (such as `redis://127.0.0.1:6379`) with default
    /// [`RedisOptions`]. Fails within the connection timeout if Redis is unreachable.
    pub async fn connect(url: &str, quota: Quota) -> Result<RedisLimiter, Error> {
        RedisLimiter::connect_with(url, quota, RedisOptions::default()).await
    }

    /// [`RedisLimiter::connect`] with options. Returns within the connection timeout: one
    /// attempt (connection and `PING`), bounded as a whole.
    pub async fn connect_with(
        url: &str,
        quota: Quota,
        options: RedisOptions,
    ) -> Result<RedisLimiter, Error> {
        let quota = MicroQuota::new(&quota)?;
        options.check()?;
        let conn = Conn::single(url, &options).await?;
        Ok(RedisLimiter::with_conn(conn, quota, options))
    }

    /// A limiter that connects in the background: returns at once, even when Redis is down.
    /// Calls made while the first attempt runs wait for it within their deadline; if it fails,
    /// the server is taken for down (see [`RedisOptions::reconnect_retries`]). Must be called
    /// within a Tokio runtime.
    pub fn connect_lazy(
        url: &str,
        quota: Quota,
        options: RedisOptions,
    ) -> Result<RedisLimiter, Error> {
        let quota = MicroQuota::new(&quota)?;
        options.check()?;
        let conn = Conn::single_lazy(url, &options)?;
        Ok(RedisLimiter::with_conn(conn, quota, options))
    }

    /// Connects to a Redis Cluster through the given seed nodes (the first that answers gives
    /// the slot map). Keys are routed to the primary that serves their slot, over one
    /// health-checked connection per primary; batches are pipelined per node. The map is read
    /// again while a node is down and after a reply says a slot moved. Needs `CLUSTER SLOTS`.
    pub async fn connect_cluster(
        urls: &[&str],
        quota: Quota,
        options: RedisOptions,
    ) -> Result<RedisLimiter, Error> {
        let quota = MicroQuota::new(&quota)?;
        options.check()?;
        let conn = Conn::cluster(urls, &options).await?;
        Ok(RedisLimiter::with_conn(conn, quota, options))
    }

    /// Connects to the primary that the Sentinels at `sentinels` (such as
    /// `redis://10.0.0.5:26379`) name for `service`, and follows it: every new connection (after
    /// a failover, a `READONLY` reply, a silent connection) asks the Sentinels again. `primary`
    /// says how to talk to the primary, its host and port ignored: the scheme (`rediss://` for
    /// TLS, checked against [`RedisOptions::tls_root_certificates`] or the system's roots),
    /// the user name and password, the database; such as `redis://:secret@primary/0`.
    pub async fn connect_sentinel(
        sentinels: &[&str],
        service: &str,
        primary: &str,
        quota: Quota,
        options: RedisOptions,
    ) -> Result<RedisLimiter, Error> {
        let quota = MicroQuota::new(&quota)?;
        options.check()?;
        let connector = sentinel::connector(sentinels, service, primary, &options)?;
        let conn = Conn::sentinel(connector, &options).await?;
        Ok(RedisLimiter::with_conn(conn, quota, options))
    }

    fn with_conn(conn: Conn, quota: MicroQuota, options: RedisOptions) -> RedisLimiter {
        let deny = (options.deny_cache > 0).then(|| Arc::new(DenyCache::new(options.deny_cache)));
        RedisLimiter {
            conn,
            quota,
            decide: Arc::new(script::decide_script()),
            settle: Arc::new(script::settle_script()),
            all_of: Arc::new(all_of::all_of_script()),
            counters: Arc::new(Counters::default()),
            local: Arc::new(Local::new(quota.effective(), &options)),
            deny,
            options: Arc::new(options),
            name: None,
            top_denied: None,
        }
    }

    /// The quota in force: the one given, with its emission interval rounded up to whole
    /// microseconds.
    pub fn quota(&self) -> Quota {
        self.quota.effective()
    }

    /// The quota Redis enforces for `quota` (given per call, as in
    /// [`RedisLimiter::check_key_n_with_quota`]): its emission interval rounded up to whole
    /// microseconds, the figures of every answer under it; an error if the scripts cannot hold
    /// it.
    pub fn quota_in_force(quota: &Quota) -> Result<Quota, Error> {
        Ok(MicroQuota::new(quota)?.effective())
    }

    /// The limiter's options.
    pub fn options(&self) -> &RedisOptions {
        &self.options
    }

    /// Counts of the answers given by the `check_*` calls so far (shared by clones), named or
    /// not, and the keys held by the local fallback of [`FailurePolicy::Local`]. See [`RedisStats`].
    pub fn stats(&self) -> RedisStats {
        let mut stats = RedisStats::default();
        self.counters.fill(&mut stats);
        self.local.fill(&mut stats);
        stats.evicting_servers = self.evicting_servers();
        stats
    }

    /// The Redis key of a bucket: the prefix, then `key` unchanged (hash tag included) while it
    /// is at most [`MAX_KEY_LEN`] bytes. A longer key becomes its hash tag and a SHA-256 digest
    /// of the whole key (at most 99 bytes after the prefix), so that key names stay bounded;
    /// keys sharing a tag still share a slot. A short key spelled as such a name (`#` and 32
    /// hex digits, after nothing or a `{tag}`) is digested too, so no two keys share a name
    /// unless 128 bits of their SHA-256 do.
    /// A key is used as given: put text a client chose through [`key_part`] first. The bucket
    /// of a key under a quota other than the limiter's own (a `*_with_quota` call) is this name
    /// followed by `%q`, the quota's emission interval in microseconds, `x`, its burst and `%`
    /// (a key ending so names that bucket: keep `%` out of keys, as `key_part` does).
    pub fn redis_key(&self, key: &str) -> String {
        key_name::full_key(&self.options.key_prefix, key)
    }

    /// The Redis key of `key`'s bucket under `quota`: [`redis_key`](Self::redis_key) under the
    /// limiter's own quota; under another (a `*_with_quota` call), the same name followed by
    /// `%q`, the quota's emission interval in microseconds, `x`, its burst and `%`. A quota is
    /// part of a bucket's identity, as in the core: a key used under two quotas has two
    /// buckets, each decided, booked and given back under its quota alone. The suffix keeps the
    /// name's hash tag, and so its Cluster slot when the key has one.
    pub(crate) fn bucket_name(&self, key: &str, quota: &MicroQuota) -> String {
        let mut name = self.redis_key(key);
        if *quota != self.quota {
            name.push_str(&quota_suffix(quota));
        }
        name
    }

    /// What the deny cache knows `key`'s bucket under `quota` by: the key itself under the
    /// limiter's own quota, the key with the quota's suffix under another.
    pub(crate) fn cache_name<'k>(&self, key: &'k str, quota: &MicroQuota) -> Cow<'k, str> {
        if *quota == self.quota {
            Cow::Borrowed(key)
        } else {
            Cow::Owned(format!("{key}{}", quota_suffix(quota)))
        }
    }

    /// The SHA1 of the decision script, as EVALSHA names it (for example to drive the same
    /// script from `redis-benchmark`). Its arguments are documented in the crate source
    /// (`script.rs`).
    pub fn decision_script_sha1(&self) -> &str {
        self.decide.get_hash()
    }

    /// The SHA1 of the all-or-nothing script ([`RedisLimiter::check_all_of_n`]), as EVALSHA
    /// names it; its arguments are documented in the crate source (`all_of.rs`).
    pub fn all_of_script_sha1(&self) -> &str {
        self.all_of.get_hash()
    }

    fn pace(&self) -> Pace {
        Pace {
            deadline: self.options.deadline,
            chunk: self.options.batch_chunk,
        }
    }

    /// The answer to give for `outcome`, counted: Redis's decision, or the policy's; and who
    /// gave it.
    fn settle(
        &self,
        outcome: Result<Result<Allowed, Denied>, Error>,
        ask: Ask<'_>,
    ) -> (Result<Allowed, Denied>, Source) {
        match outcome {
            Ok(decision) => {
                self.counters.record(&decision, ask.cost());
                (decision, Source::Redis)
            }
            Err(e) => policy::answer(&e, ask, &self.options, &self.local, &self.counters),
        }
    }
}

impl core::fmt::Debug for RedisLimiter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RedisLimiter")
            .field("quota", &self.quota())
            .field("name", &self.name)
            .field("options", &self.options)
            .field("stats", &self.stats())
            .finish()
    }
}

/// The suffix of a bucket's name under a quota other than the limiter's own (see
/// [`RedisLimiter::bucket_name`]).
fn quota_suffix(quota: &MicroQuota) -> String {
    format!("%q{}x{}%", quota.interval_us, quota.burst)
}

/// The README's example, compiled as a doc test so that it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}
