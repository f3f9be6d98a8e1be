//! The counters a keyed limiter keeps whether named or not: keys held, evictions and
//! overflow denials (its part of [`KeyedStats`]).

use crate::stats::KeyedStats;

// Always the real atomics, also under loom: see `sync::counter`.
use crate::sync::counter::{AtomicU64, AtomicUsize, Ordering};

/// The live counters behind `len` and the table's fields of [`KeyedStats`]. All `Relaxed`:
/// statistics, read alone, that order nothing.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    live: AtomicUsize,
    evictions: AtomicU64,
    denials: AtomicU64,
    idle_evictions: AtomicU64,
}

impl Counters {
    pub(crate) fn key_added(&self) {
        // Relaxed: see the struct docs.
        self.live.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn key_removed(&self) {
        // Relaxed: see the struct docs. A removal counted before its addition is read as 0.
        self.live.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn count_eviction(&self) {
        // Relaxed: see the struct docs.
        self.evictions.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_idle_evictions(&self, n: usize) {
        // Relaxed: see the struct docs.
        self.idle_evictions.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn count_denial(&self) {
        // Relaxed: see the struct docs.
        self.denials.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn live(&self) -> usize {
        // Relaxed: see the struct docs. A transient wrap below zero reads as zero.
        let n = self.live.load(Ordering::Relaxed);
        if n > isize::MAX as usize {
            0
        } else {
            n
        }
    }

    pub(crate) fn fill(&self, stats: &mut KeyedStats) {
        stats.keys = self.live() as u64;
        // Relaxed: see the struct docs.
        stats.idle_evictions = self.idle_evictions.load(Ordering::Relaxed);
        stats.overflow_evictions = self.evictions.load(Ordering::Relaxed);
        stats.overflow_denials = self.denials.load(Ordering::Relaxed);
    }
}
