//! `RedisOptions`: everything about a [`RedisLimiter`](super::RedisLimiter) besides its quota.

use super::policy::FailurePolicy;
use core::time::Duration;

/// Settings of a [`RedisLimiter`](super::RedisLimiter), built from [`RedisOptions::default`].
///
/// ```
/// use cellrate::redis::{FailurePolicy, RedisOptions};
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
#[derive(Clone, Debug)]
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
    /// How many times a lost connection is retried before calls fail.
    pub reconnect_retries: usize,
    /// The `retry_after` of a refusal by [`FailurePolicy::FailClosed`].
    pub failure_retry_after: Duration,
    /// Whether a key Redis does not hold starts empty rather than full.
    pub start_empty: bool,
    /// How long a start-empty key outlives its full bucket before it is forgotten.
    pub forget_after: Duration,
    /// How much longer than the time until full a key lives.
    pub expiry_margin: Duration,
}

impl Default for RedisOptions {
    /// Prefix `"cellrate:"`, [`FailurePolicy::FailOpen`], a 100 ms deadline per call, a 250 ms
    /// connection timeout with 2 reconnection retries, 1 s `retry_after` when failing closed,
    /// buckets that start full, keys that expire exactly when their bucket is full.
    fn default() -> RedisOptions {
        RedisOptions {
            key_prefix: "cellrate:".to_owned(),
            failure_policy: FailurePolicy::FailOpen,
            deadline: Duration::from_millis(100),
            connection_timeout: Duration::from_millis(250),
            reconnect_retries: 2,
            failure_retry_after: Duration::from_secs(1),
            start_empty: false,
            forget_after: Duration::ZERO,
            expiry_margin: Duration::ZERO,
        }
    }
}

impl RedisOptions {
    /// Prepended to every key. Keep hash tags out of it: a key's own `{tag}` then decides its
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

    /// The longest a call waits for Redis, connection included; after it the call has an
    /// unknown outcome ([`Error::Timeout`](super::Error::Timeout)) and the policy applies.
    pub fn deadline(mut self, deadline: Duration) -> RedisOptions {
        self.deadline = deadline;
        self
    }

    /// The longest one connection attempt may take (at connect and when reconnecting).
    pub fn connection_timeout(mut self, timeout: Duration) -> RedisOptions {
        self.connection_timeout = timeout;
        self
    }

    /// How many times a lost connection is retried (with a short exponential backoff) before
    /// calls fail; the next call after that starts a new attempt. Reconnection runs in the
    /// background: calls meanwhile wait at most their deadline. A call itself is never sent
    /// twice, on a single server or a Cluster (where a redirect during resharding therefore
    /// fails that one call, which did not run).
    pub fn reconnect_retries(mut self, retries: usize) -> RedisOptions {
        self.reconnect_retries = retries;
        self
    }

    /// The `retry_after` of the [`Denied`](crate::Denied) given by
    /// [`FailurePolicy::FailClosed`].
    pub fn failure_retry_after(mut self, retry_after: Duration) -> RedisOptions {
        self.failure_retry_after = retry_after;
        self
    }

    /// Buckets start empty instead of full: a key Redis does not hold is empty at first sight
    /// (the first check of it that is not a peek), so that clients seen for the first time,
    /// or again after a long absence, cannot burst. That first sight is written even when it
    /// is denied, and every key then lives until its bucket is full plus
    /// [`forget_after`](Self::forget_after()), after which it is forgotten and would start
    /// empty again. (With buckets that start full, a key lives exactly until its bucket is
    /// full: a missing key is a full bucket.)
    pub fn start_empty(mut self) -> RedisOptions {
        self.start_empty = true;
        self
    }

    /// How long a key of a [`start_empty`](Self::start_empty()) limiter is kept after its
    /// bucket is full (default zero): a client that comes back within it finds a full bucket,
    /// one that comes back later starts empty again. No effect on buckets that start full.
    pub fn forget_after(mut self, forget_after: Duration) -> RedisOptions {
        self.forget_after = forget_after;
        self
    }

    /// Keys live `margin` longer than the time until their bucket is full (default zero).
    /// Expiry runs on the server's clock; when times come from the callers (the `_at` forms)
    /// and their clocks may lag the server's, a margin of at least that lag keeps a key from
    /// vanishing (reading as a full bucket) before the callers' time says it is full.
    pub fn expiry_margin(mut self, margin: Duration) -> RedisOptions {
        self.expiry_margin = margin;
        self
    }

    /// Milliseconds a key lives beyond the time its bucket is full: the margin, plus the
    /// forget-after time of start-empty buckets. Capped at 2^50 to keep the script exact.
    pub(crate) fn keep_ms(&self) -> u64 {
        let forget = if self.start_empty {
            self.forget_after
        } else {
            Duration::ZERO
        };
        let extra = self.expiry_margin.saturating_add(forget);
        u64::try_from(extra.as_millis())
            .unwrap_or(u64::MAX)
            .min(1 << 50)
    }
}
