//! [`RedisStats`]: what a Redis limiter counts.

/// What a [`RedisLimiter`](super::RedisLimiter) has answered, counted by every limiter named
/// or not (a round trip dwarfs a count), shared by its clones; and the table figures of the
/// local fallback of [`FailurePolicy::Local`](super::FailurePolicy::Local).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedisStats {
    /// Requests Redis admitted (of cost 1 or more).
    pub allowed: u64,
    /// Requests Redis refused.
    pub denied: u64,
    /// Requests of cost 0 answered: peeks, which spend nothing.
    pub peeks: u64,
    /// Requests refused by the local deny cache, without a round trip.
    pub cached_denied: u64,
    /// Requests admitted by the `FailOpen` failure policy because Redis gave no
    /// decision.
    pub failed_open: u64,
    /// Requests refused by the `FailClosed` failure policy (or because their
    /// cost exceeds the burst) because Redis gave no decision.
    pub failed_closed: u64,
    /// Requests admitted by the local limiter of the `Local` failure policy.
    pub local_allowed: u64,
    /// Requests refused by the local limiter of the `Local` failure policy.
    pub local_denied: u64,
    /// Of the failures, those whose outcome is unknown (the deadline passed or
    /// the connection was lost after the call was sent: the tokens may have been spent).
    pub unknown: u64,
    /// Requests refused because of a usage error (keys of different slots, a
    /// key of another type, a quota the script cannot hold).
    pub errors: u64,
    /// Of the failures, those Redis refused for want of memory (`OOM`: `maxmemory` reached
    /// under `noeviction`), which the failure policy answered.
    pub oom: u64,
    /// Servers whose memory settings, as last read (at each connection, and by
    /// [`RedisLimiter::memory_settings`](super::RedisLimiter::memory_settings)), let Redis
    /// evict the limiter's keys ([`MemoryRisk::Evicts`](super::MemoryRisk::Evicts)).
    pub evicting_servers: u64,
    /// Keys held by the local fallback now.
    pub keys: u64,
    /// Keys the local fallback removed by `evict_idle`, their buckets full.
    pub idle_evictions: u64,
    /// Keys the local fallback removed to make room for a new key.
    pub overflow_evictions: u64,
    /// New keys the local fallback denied for lack of room.
    pub overflow_denials: u64,
}
