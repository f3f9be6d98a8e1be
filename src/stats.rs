//! [`Stats`]: the one snapshot of counts that every limiter type returns from `stats()`.

/// What a limiter has decided and held, counted since it was built: the figure every limiter
/// type returns from `stats()` ([`Limiter`](crate::Limiter), [`KeyedLimiter`](crate::KeyedLimiter)
/// and the Redis limiter), with one meaning per field whatever the type. A field a type has no
/// use for stays 0 (a [`Limiter`](crate::Limiter) holds no keys and evicts nothing).
///
/// **Decisions are counted only by a named limiter** (`named("api")` on each type): `allowed`,
/// `denied` and `peeks` stay 0 on an unnamed [`Limiter`](crate::Limiter) or
/// [`KeyedLimiter`](crate::KeyedLimiter), so that the default check pays nothing for counts it
/// does not keep. The other figures are kept by every limiter, named or not: they are counted
/// off the hot path (a sweep, an overflow, a Redis call). The Redis limiter counts its
/// decisions named or not (a round trip dwarfs a count).
///
/// Counted: the checks (`check*`, `check_key*`, a key handle's `check*`, `check_many_n`) and
/// the waiting forms (`wait_n`, `until_ready_n`: allowed when the tokens were booked, denied
/// when refused). Not counted: reservations booked directly, [`all_of`](crate::all_of) checks
/// and refunds. Counts are read with relaxed loads, so a snapshot taken during traffic may miss
/// the calls in flight; it is exact once they return.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Requests admitted (of cost 1 or more).
    pub allowed: u64,
    /// Requests refused by the limiter's decision (for the Redis limiter: by Redis).
    pub denied: u64,
    /// Requests of cost 0 answered: peeks, which spend nothing.
    pub peeks: u64,
    /// Keys held now (keyed limiters; the Redis limiter's local fallback). Not a count of
    /// events: it goes down when keys are removed.
    pub keys: u64,
    /// Keys removed by `evict_idle` because their bucket was full (they carried no
    /// information). A full bucket whose slot a new key takes over is not counted.
    pub idle_evictions: u64,
    /// Buckets that were not full, removed to make room for a new key
    /// ([`OverflowPolicy::EvictNearestNew`](crate::OverflowPolicy::EvictNearestNew)).
    pub overflow_evictions: u64,
    /// New keys denied for lack of room
    /// ([`OverflowPolicy::DenyNewKeys`](crate::OverflowPolicy::DenyNewKeys), or any policy
    /// when every slot of the window was being inserted at that instant).
    pub overflow_denials: u64,
    /// Redis limiter: requests refused by the local deny cache, without a round trip.
    pub cached_denied: u64,
    /// Redis limiter: requests admitted by the `FailOpen` failure policy because Redis gave no
    /// decision.
    pub failed_open: u64,
    /// Redis limiter: requests refused by the `FailClosed` failure policy (or because their
    /// cost exceeds the burst) because Redis gave no decision.
    pub failed_closed: u64,
    /// Redis limiter: requests admitted by the local limiter of the `Local` failure policy.
    pub local_allowed: u64,
    /// Redis limiter: requests refused by the local limiter of the `Local` failure policy.
    pub local_denied: u64,
    /// Redis limiter: of the failures, those whose outcome is unknown (the deadline passed or
    /// the connection was lost after the call was sent: the tokens may have been spent).
    pub unknown: u64,
    /// Redis limiter: requests refused because of a usage error (keys of different slots, a
    /// key of another type, a quota the script cannot hold).
    pub errors: u64,
}
