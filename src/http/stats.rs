//! `LayerStats`: what a layer decided, counted.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counts of a layer's answers since it was built (shared by its clones), per request: a
/// request checked against several policies counts once. `allowed` and `denied` mean what they
/// mean in [`Stats`](crate::Stats); the limiters behind the policies keep their own
/// [`Stats`](crate::Stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LayerStats {
    /// Requests admitted.
    pub allowed: u64,
    /// Requests refused (429 or `RESOURCE_EXHAUSTED`): the `denied` of [`Stats`](crate::Stats).
    pub denied: u64,
    /// Requests shadow mode let through that the limit would have refused.
    pub shadow_denied: u64,
    /// Requests answered by [`MissingKey`](super::MissingKey) because a policy found no key
    /// (in shadow mode: let through).
    pub no_key: u64,
    /// Refunds made because the response matched the refund predicate.
    pub refunded: u64,
}

/// The live counters. `Relaxed` throughout: independent tallies that publish nothing else.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) allowed: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) shadow_refused: AtomicU64,
    pub(crate) no_key: AtomicU64,
    pub(crate) refunded: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        // Relaxed: an independent tally.
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> LayerStats {
        // Relaxed: independent tallies; a snapshot during traffic may be off by in-flight calls.
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LayerStats {
            allowed: get(&self.allowed),
            denied: get(&self.refused),
            shadow_denied: get(&self.shadow_refused),
            no_key: get(&self.no_key),
            refunded: get(&self.refunded),
        }
    }
}
