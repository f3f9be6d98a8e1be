//! [`Stats`] and [`KeyedStats`]: what a limiter and a keyed limiter return from `stats()`.

/// What a [`Limiter`](crate::Limiter) has decided since it was [named](crate::Limiter::named)
/// (all 0 on an unnamed limiter, whose check pays nothing for counts).
///
/// Counted: checks, waits (allowed when the tokens were there, denied when refused; a wait
/// dropped before it ended is not counted) and the items a paced adapter hands on. Not counted:
/// reservations, [`all_of`](crate::all_of) checks and give-backs. A snapshot taken during
/// traffic may miss the calls in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Requests admitted (of cost 1 or more).
    pub allowed: u64,
    /// Requests denied.
    pub denied: u64,
    /// Requests of cost 0 answered: peeks, which spend nothing.
    pub peeks: u64,
}

/// What a [`KeyedLimiter`](crate::KeyedLimiter) has decided and holds. The decisions are
/// counted as [`Stats`]' are, once the limiter is [named](crate::KeyedLimiter::named); the
/// table's figures are kept by every keyed limiter, since they are counted off the hot path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyedStats {
    /// Requests admitted (of cost 1 or more).
    pub allowed: u64,
    /// Requests denied.
    pub denied: u64,
    /// Requests of cost 0 answered: peeks, which spend nothing.
    pub peeks: u64,
    /// Keys held now. Not a count of events: it goes down when keys are removed.
    pub keys: u64,
    /// Keys removed by `evict_idle` because their bucket was full (they carried no
    /// information). A full bucket whose slot a new key takes over is not counted.
    pub idle_evictions: u64,
    /// Buckets that were not full, removed to make room for a new key
    /// ([`OverflowPolicy::EvictNearestNew`](crate::OverflowPolicy::EvictNearestNew)).
    pub overflow_evictions: u64,
    /// New keys denied for lack of room
    /// ([`OverflowPolicy::DenyNewKeys`](crate::OverflowPolicy::DenyNewKeys), any policy in a
    /// limiter built with [`start_empty`](crate::KeyedLimiterBuilder::start_empty), or any
    /// policy when every slot of the window was being inserted at that instant).
    pub overflow_denials: u64,
}
