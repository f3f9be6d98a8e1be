//! The counters a keyed limiter keeps, and the snapshot [`KeyedStats`] the caller reads.

// Always the real atomics, also under loom: see `sync::counter`.
use crate::sync::counter::{AtomicU64, AtomicUsize, Ordering};

/// What a [`KeyedLimiter`](crate::KeyedLimiter) has done about running out of room, read by
/// [`KeyedLimiter::stats`](crate::KeyedLimiter::stats).
///
/// An overflow is a new key that found neither a free slot nor an idle bucket in its window.
/// Each one is counted exactly once, in the field of the policy that handled it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyedStats {
    /// Buckets that were not full, removed to make room for a new key
    /// ([`OverflowPolicy::EvictNearestFull`](crate::OverflowPolicy::EvictNearestFull)).
    pub overflow_evictions: u64,
    /// New keys denied for lack of room ([`OverflowPolicy::DenyNewKeys`](crate::OverflowPolicy::DenyNewKeys),
    /// or any policy when every slot of the window was being inserted at that instant).
    pub overflow_denials: u64,
}

/// The live counters behind [`KeyedStats`] and `len`. All `Relaxed`: they are statistics,
/// read alone, and order nothing.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    live: AtomicUsize,
    evictions: AtomicU64,
    denials: AtomicU64,
}

impl Counters {
    pub(crate) fn key_added(&self) {
        // Relaxed: see the struct docs.
        self.live.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn key_removed(&self) {
        // Relaxed: see the struct docs. A removal is counted by the CAS that did it, after
        // the publish that counted the addition, so the count never goes below zero for long;
        // `live` saturates at zero when read in case a removal is counted first.
        self.live.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn count_eviction(&self) {
        // Relaxed: see the struct docs.
        self.evictions.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_denial(&self) {
        // Relaxed: see the struct docs.
        self.denials.fetch_add(1, Ordering::Relaxed);
    }

    /// Keys held, as far as the counter knows.
    pub(crate) fn live(&self) -> usize {
        // Relaxed: see the struct docs. A transient wrap below zero reads as zero.
        let n = self.live.load(Ordering::Relaxed);
        if n > isize::MAX as usize {
            0
        } else {
            n
        }
    }

    pub(crate) fn snapshot(&self) -> KeyedStats {
        KeyedStats {
            // Relaxed: see the struct docs.
            overflow_evictions: self.evictions.load(Ordering::Relaxed),
            overflow_denials: self.denials.load(Ordering::Relaxed),
        }
    }
}
