//! [`Stats`] and [`KeyedStats`]: what a limiter and a keyed limiter return from `stats()`.

/// What a [`Limiter`](crate::Limiter) has decided since it was [named](crate::Limiter::named):
/// all 0 on an unnamed limiter, so that the default check pays nothing for counts it does
/// not keep.
///
/// Counted: the checks (`check*`), the waits (`wait*`, `until_ready*`: allowed when the tokens
/// were there, denied when refused; a wait dropped before it ended is not counted) and the
/// items a paced stream, sink or writer hands on. Not counted: reservations booked directly,
/// [`all_of`](crate::all_of) checks and give-backs. Counts are read with relaxed loads, so a
/// snapshot taken during traffic may miss the calls in flight; it is exact once they return.
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

/// What a [`KeyedLimiter`](crate::KeyedLimiter) has decided and holds. The decisions
/// (`allowed`, `denied`, `peeks`) are counted as [`Stats`]' are, only once the limiter is
/// [named](crate::KeyedLimiter::named), by its checks and those of its key handles; the table's
/// figures (keys held, evictions, overflow denials) are kept by every keyed limiter, named or
/// not, since they are counted off the hot path.
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

impl KeyedStats {}
