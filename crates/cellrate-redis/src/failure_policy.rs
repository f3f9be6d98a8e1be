//! What a limiter answers when Redis gives no decision: [`FailurePolicy`].

/// What [`check_key_n`](super::RedisLimiter::check_key_n) answers when Redis gives no decision
/// (unreachable, known to be down, or no reply within the deadline).
///
/// Either way the failure is counted in [`RedisStats`](crate::RedisStats), and a call whose outcome is unknown (the
/// deadline passed after the script was sent) is counted in [`RedisStats::unknown`](crate::RedisStats::unknown) as well: it may
/// have spent tokens on the server, and it is never retried. A request that costs more than
/// the burst is denied whatever the policy, since it could never pass. No policy answers a
/// [usage error](crate::Error::is_usage) (keys of different slots, a key of another type or holding
/// a corrupt value, a quota the script cannot hold): those are refused and counted in
/// [`RedisStats::errors`](crate::RedisStats::errors).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailurePolicy {
    /// Admit the request: availability over precision. The answer is an [`Allowed`](cellrate::Allowed) with
    /// `remaining` 0 and `reset_after` 0 (nothing is known about the bucket).
    #[default]
    FailOpen,
    /// Refuse the request: the limit over availability. The answer is a [`Denied`](cellrate::Denied) with
    /// `remaining` 0, `reset_after` 0 and `retry_after` the limiter's
    /// [`failure_retry_after`](super::RedisOptions::failure_retry_after).
    FailClosed,
    /// Decide with a local [`KeyedLimiter`](cellrate::KeyedLimiter) while Redis gives no
    /// decision: each quota becomes this process's share of it, `quota.split(servers)` (or
    /// [`RedisOptions::local_quota`](super::RedisOptions::local_quota) for the limiter's own
    /// quota), so that `servers` processes falling back together admit about what the shared
    /// limit would. Local buckets start as the Redis ones do (full, or empty) and are not
    /// synchronised with Redis in either direction. Counted in [`RedisStats::local_allowed`](crate::RedisStats::local_allowed) and
    /// [`RedisStats::local_denied`](crate::RedisStats::local_denied). A quota that cannot be split, or more than 64 distinct quotas,
    /// fail closed.
    Local {
        /// How many processes share the limit.
        servers: u32,
    },
}
