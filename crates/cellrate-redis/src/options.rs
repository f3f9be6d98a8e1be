//! `RedisOptions`: everything about a [`RedisLimiter`](super::RedisLimiter) besides its quota.

use super::error::Error;
use super::failure_policy::FailurePolicy;
use cellrate::Quota;
use core::fmt;
use core::time::Duration;
use std::sync::Arc;

mod tls;

/// A function told of every error a `check_*` call answered by policy or refused (see
/// [`RedisOptions::on_error`]).
pub type ErrorHook = Arc<dyn Fn(&Error) + Send + Sync>;

/// A client certificate chain and its private key, both PEM.
pub type ClientIdentity = (Arc<[u8]>, Arc<[u8]>);

/// Settings of a [`RedisLimiter`](super::RedisLimiter), built from [`RedisOptions::default`].
///
/// ```
/// use cellrate_redis::{FailurePolicy, RedisOptions};
/// use std::time::Duration;
///
/// let options = RedisOptions::default()
///     .key_prefix("api:rl:")
///     .failure_policy(FailurePolicy::FailClosed)
///     .deadline(Duration::from_millis(20));
/// assert_eq!(options.key_prefix, "api:rl:");
/// ```
///
/// The fields are public to read; each is set by the builder method of the same name.
#[derive(Clone)]
#[non_exhaustive]
pub struct RedisOptions {
    /// Prepended to every key; see [`RedisOptions::key_prefix`](Self::key_prefix()).
    pub key_prefix: String,
    /// What to answer when Redis gives no decision.
    pub failure_policy: FailurePolicy,
    /// The longest a call waits for Redis.
    pub deadline: Duration,
    /// The longest one connection attempt may take.
    pub connection_timeout: Duration,
    /// Connection attempts after the first, made at once, before a server is taken for down.
    pub reconnect_retries: usize,
    /// Calls in a row that time out on a silent connection before it is replaced.
    pub silent_timeouts: u32,
    /// Calls in a row that time out, replies or not, before the breaker trips.
    pub breaker_timeouts: u32,
    /// The first pause between attempts to reach a server taken for down (and between reads of
    /// a Cluster's slot map).
    pub probe_interval: Duration,
    /// The most calls of a batch sent in one pipeline.
    pub batch_chunk: usize,
    /// The `retry_after` of a refusal by [`FailurePolicy::FailClosed`].
    pub failure_retry_after: Duration,
    /// Whether a key Redis does not hold starts empty rather than full.
    pub start_empty: bool,
    /// How long a start-empty key outlives its full bucket before it is forgotten.
    pub forget_after: Duration,
    /// How much longer than the time until full a key written at a caller's time lives.
    pub expiry_margin: Duration,
    /// The most keys the local limiter of [`FailurePolicy::Local`] holds.
    pub local_max_keys: usize,
    /// The local quota of [`FailurePolicy::Local`] for the limiter's own quota, if not its
    /// share.
    pub local_quota: Option<Quota>,
    /// The most keys the local deny cache holds; 0 (the default) turns it off.
    pub deny_cache: usize,
    /// Told of every error a `check_*` call answered by policy or refused.
    pub on_error: Option<ErrorHook>,
    /// The certificates (PEM) that `rediss://` servers must chain to, instead of the system's.
    pub tls_root_certificates: Option<Arc<[u8]>>,
    /// The client certificate chain and key (PEM) that `rediss://` servers may ask for.
    pub tls_client_identity: Option<ClientIdentity>,
}

impl fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisOptions")
            .field("key_prefix", &self.key_prefix)
            .field("failure_policy", &self.failure_policy)
            .field("deadline", &self.deadline)
            .field("connection_timeout", &self.connection_timeout)
            .field("reconnect_retries", &self.reconnect_retries)
            .field("silent_timeouts", &self.silent_timeouts)
            .field("breaker_timeouts", &self.breaker_timeouts)
            .field("probe_interval", &self.probe_interval)
            .field("batch_chunk", &self.batch_chunk)
            .field("failure_retry_after", &self.failure_retry_after)
            .field("start_empty", &self.start_empty)
            .field("forget_after", &self.forget_after)
            .field("expiry_margin", &self.expiry_margin)
            .field("local_max_keys", &self.local_max_keys)
            .field("local_quota", &self.local_quota)
            .field("deny_cache", &self.deny_cache)
            .field("on_error", &self.on_error.as_ref().map(|_| "set"))
            .field(
                "tls_root_certificates",
                &self.tls_root_certificates.as_ref().map(|_| "set"),
            )
            .field(
                "tls_client_identity",
                &self.tls_client_identity.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl Default for RedisOptions {
    /// Prefix `"cellrate:"`, [`FailurePolicy::FailOpen`], a 100 ms deadline per call, a 250 ms
    /// connection timeout with 1 retry, a connection replaced after 2 silent timeouts in a
    /// row, the breaker tripped after 5 timeouts in a row, a down server probed from every
    /// 100 ms (backing off to 1.6 s), batches in chunks of 1,000, 1 s `retry_after`
    /// when failing closed, buckets that start full, keys that expire when their bucket is full
    /// (plus a 1 s margin when written at a caller's time), a local fallback of 100,000 keys
    /// (used only under [`FailurePolicy::Local`]), no deny cache, no error hook, and for
    /// `rediss://` the system's root certificates and no client certificate.
    fn default() -> RedisOptions {
        RedisOptions {
            key_prefix: "cellrate:".to_owned(),
            failure_policy: FailurePolicy::FailOpen,
            deadline: Duration::from_millis(100),
            connection_timeout: Duration::from_millis(250),
            reconnect_retries: 1,
            silent_timeouts: 2,
            breaker_timeouts: 5,
            probe_interval: Duration::from_millis(100),
            batch_chunk: 1000,
            failure_retry_after: Duration::from_secs(1),
            start_empty: false,
            forget_after: Duration::ZERO,
            expiry_margin: Duration::from_secs(1),
            local_max_keys: 100_000,
            local_quota: None,
            deny_cache: 0,
            on_error: None,
            tls_root_certificates: None,
            tls_client_identity: None,
        }
    }
}

impl RedisOptions {
    /// Prepended to every key; must not be empty, and must belong to the limiter alone: a
    /// caller's key names any Redis key under it, and the scripts overwrite a key that holds a
    /// number (a key holding anything else is refused, [`Error::CorruptValue`], and never
    /// overwritten). An empty prefix is refused at connect ([`Error::InvalidOptions`]). Keep
    /// hash tags out of it: a key's own `{tag}` then decides its
    /// Cluster slot (Redis hashes the first `{...}` of the full key), and related keys such as
    /// `{user42}:read` and `{user42}:write` share one slot. A prefix that holds a tag itself
    /// pins every key to that one slot.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> RedisOptions {
        self.key_prefix = prefix.into();
        self
    }

    /// What to answer when Redis gives no decision (see [`FailurePolicy`]).
    pub fn failure_policy(mut self, policy: FailurePolicy) -> RedisOptions {
        self.failure_policy = policy;
        self
    }

    /// The longest a call waits for Redis, connection included. A call that passed it after
    /// being sent has an unknown outcome ([`Error::Timeout`]); one that was still waiting
    /// for a connection was not sent ([`Error::Unavailable`]). Either way the policy applies.
    /// A batch gets this deadline per chunk of [`batch_chunk`](Self::batch_chunk()) calls.
    pub fn deadline(mut self, deadline: Duration) -> RedisOptions {
        self.deadline = deadline;
        self
    }

    /// The longest one connection attempt may take (at connect and when reconnecting).
    pub fn connection_timeout(mut self, timeout: Duration) -> RedisOptions {
        self.connection_timeout = timeout;
        self
    }

    /// Connection attempts after the first, when a connection is lost (default 1), before the
    /// server is taken for down. Callers wait for them within their deadline. When they all
    /// fail, calls fail at once, unsent ([`Error::Unavailable`], answered by the policy), and
    /// the server is tried again until it answers. Every attempt but the first after a healthy
    /// spell waits a backoff: [`probe_interval`](Self::probe_interval()) doubled per failed
    /// attempt or replaced connection since the last reply in time, up to 16 times it, each
    /// pause a random 50-100 % of that (so that many processes do not reconnect in step). An attempt succeeds only when the
    /// server says (`ROLE`) it is a primary. A call itself is never sent twice.
    pub fn reconnect_retries(mut self, retries: usize) -> RedisOptions {
        self.reconnect_retries = retries;
        self
    }

    /// A connection is replaced after this many calls in a row time out with no reply at all
    /// on it since they were sent (default 2; at least 1). A connection frozen without being
    /// closed (a failover behind a virtual IP, a NAT dropping state, a host that stopped) is
    /// told apart from a slow server by this silence: a slow server still answers, late, the
    /// calls sent before, and a late reply counts (calls are waited for in the background up
    /// to 16 deadlines after their own).
    pub fn silent_timeouts(mut self, n: u32) -> RedisOptions {
        self.silent_timeouts = n;
        self
    }

    /// The breaker trips after this many calls in a row time out on a connection, whether or
    /// not replies still come late on it (default 5; at least 1): a server that answers `PING`
    /// but not scripts (a long script, `CLIENT PAUSE WRITE` during a manual failover), or one
    /// too slow for the deadline. While tripped, calls fail at once, unsent
    /// ([`Error::Unavailable`], answered by the policy), instead of each waiting out its
    /// deadline; a probe (`EVAL "return 1" 0`, which writes nothing but waits as scripts do)
    /// runs on the connection, backing off from [`probe_interval`](Self::probe_interval()),
    /// and the first that answers within the deadline closes the breaker.
    pub fn breaker_timeouts(mut self, n: u32) -> RedisOptions {
        self.breaker_timeouts = n;
        self
    }

    /// The first pause between connection attempts to a server taken for down, and between
    /// probes of a tripped breaker (default 100 ms), doubling up to 16 times it (see
    /// [`reconnect_retries`](Self::reconnect_retries())); on a Cluster, also the first pause
    /// between reads of the slot map while a node is down or a reply said a slot moved.
    pub fn probe_interval(mut self, interval: Duration) -> RedisOptions {
        self.probe_interval = interval;
        self
    }

    /// The most calls of one batch ([`check_many`](super::RedisLimiter::check_many)) sent in
    /// one pipeline (default 1,000; at least 1). Chunks go one after another, each with the
    /// whole [`deadline`](Self::deadline()), so a batch of `n` calls takes at most
    /// `ceil(n / chunk)` deadlines; size the chunk so that one takes well under the deadline
    /// (the script costs a few µs of server time). When a chunk fails, its calls get its error
    /// (a timed-out chunk is outcome unknown), the chunks before keep their answers and the
    /// later ones are not sent.
    pub fn batch_chunk(mut self, calls: usize) -> RedisOptions {
        self.batch_chunk = calls;
        self
    }

    /// The `retry_after` of the [`Denied`](cellrate::Denied) given by
    /// [`FailurePolicy::FailClosed`].
    pub fn failure_retry_after(mut self, retry_after: Duration) -> RedisOptions {
        self.failure_retry_after = retry_after;
        self
    }

    /// With `on`, buckets start empty instead of full (the default, `false`): a key Redis does not hold is empty at first sight
    /// (the first check of it that is not a peek), so that clients seen for the first time,
    /// or again after a long absence, cannot burst. That first sight is written even when it
    /// is denied, and every key then lives until its bucket is full plus
    /// [`forget_after`](Self::forget_after()), after which it is forgotten and would start
    /// empty again. (With buckets that start full, a key lives exactly until its bucket is
    /// full: a missing key is a full bucket.)
    pub fn start_empty(mut self, on: bool) -> RedisOptions {
        self.start_empty = on;
        self
    }

    /// How long a key of a [`start_empty`](Self::start_empty()) limiter is kept after its
    /// bucket is full (default zero): a client that comes back within it finds a full bucket,
    /// one that comes back later starts empty again. No effect on buckets that start full.
    pub fn forget_after(mut self, forget_after: Duration) -> RedisOptions {
        self.forget_after = forget_after;
        self
    }

    /// Keys written at a caller's time (the `_at` forms) live `margin` longer than the time
    /// until their bucket is full (default 1 s). Expiry runs on the server's clock: a caller
    /// whose clock lags the one that wrote the key (another server, or the server itself)
    /// would otherwise find it gone, a full bucket, before its own time says so. Set it to at
    /// least the worst lag between the clocks. Keys written at the server's time need no
    /// margin (decision and expiry read one clock) and get none.
    pub fn expiry_margin(mut self, margin: Duration) -> RedisOptions {
        self.expiry_margin = margin;
        self
    }

    /// The most keys the local limiter of [`FailurePolicy::Local`] holds (default 100,000;
    /// one table per quota, allocated at the first fallback and resident only as touched).
    pub fn local_max_keys(mut self, n: usize) -> RedisOptions {
        self.local_max_keys = n;
        self
    }

    /// The quota [`FailurePolicy::Local`] applies, while Redis is unreachable, to checks under
    /// the limiter's own quota, instead of its share `quota.split(servers)`.
    pub fn local_quota(mut self, quota: Quota) -> RedisOptions {
        self.local_quota = Some(quota);
        self
    }

    /// A local cache of refusals, of at most `max_keys` keys (default 0: off). After Redis
    /// refuses a key, the key's bucket state is remembered here until it could pass again,
    /// and checks of it on the server's clock that it could not pass are refused locally,
    /// without a round trip: an abusive client then costs nothing on the server. The cache
    /// never admits (what it does not refuse goes to Redis), so it never turns a refusal into
    /// an admission. The other way, it can refuse what Redis would admit: a cached state is
    /// dated from the reply's arrival, after Redis decided, so a cached refusal can outlast
    /// Redis's by the reply's latency, or longer when tokens came back in another way (a
    /// refund from another process, a deleted key). Refunds through this limiter forget the
    /// key. Only calls on the server's clock use it, not the `_at` forms.
    pub fn deny_cache(mut self, max_keys: usize) -> RedisOptions {
        self.deny_cache = max_keys;
        self
    }

    /// Calls `hook` with every error a `check_*` call answered by the failure policy or, for
    /// [usage errors](Error::is_usage), refused: where to log them. It runs on the
    /// caller's task; keep it short.
    pub fn on_error(mut self, hook: impl Fn(&Error) + Send + Sync + 'static) -> RedisOptions {
        self.on_error = Some(Arc::new(hook));
        self
    }

    /// The options' mistakes that no call could mend: an empty key prefix.
    pub(crate) fn check(&self) -> Result<(), Error> {
        if self.key_prefix.is_empty() {
            return Err(Error::InvalidOptions(
                "an empty key prefix: every key a caller names would be any Redis key, other \
                 data included; give the limiter a prefix of its own"
                    .to_owned(),
            ));
        }
        Ok(())
    }

    /// Milliseconds a key lives beyond the time its bucket is full: the forget-after time of
    /// start-empty buckets, plus the margin when the time is the caller's. Capped at 2^50 to
    /// keep the script exact.
    pub(crate) fn keep_ms(&self, caller_time: bool) -> u64 {
        let forget = if self.start_empty {
            self.forget_after
        } else {
            Duration::ZERO
        };
        let margin = if caller_time {
            self.expiry_margin
        } else {
            Duration::ZERO
        };
        let extra = margin.saturating_add(forget);
        u64::try_from(extra.as_millis())
            .unwrap_or(u64::MAX)
            .min(1 << 50)
    }
}
