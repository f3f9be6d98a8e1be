//! `Seen`: the tags of keys a `start_empty` table removed while full, in a Bloom filter of two
//! generations, so that they come back full (docs/design.md §6.5, with its costs).
//!
//! The bits are set and read with relaxed atomics: a removal sets them before its first step
//! (the freeze of W, `SeqCst`), and an insert that takes the slot, or scans past it, reads them
//! after it has seen that step, so it sees them; a bit lost to a concurrent clear of the older
//! generation is part of the filter's forgetting.

use crate::sync::counter::{AtomicU64, Ordering};
use alloc::boxed::Box;

/// Bits per key at a full generation, and bits set per key.
const BITS_PER_KEY: usize = 8;
const HASHES: u64 = 5;

pub(crate) struct Seen {
    generations: [Box<[AtomicU64]>; 2],
    /// Which generation takes new keys (0 or 1), and how many it has taken.
    current: AtomicU64,
    taken: AtomicU64,
    /// Keys per generation: the table's slots.
    per_generation: u64,
    bits: u64,
}

impl Seen {
    pub(crate) fn new(slots: usize) -> Seen {
        // At least 4,096 bits (512 bytes a generation): a small table's few keys then share
        // next to no bits, and so are next to never taken for one another.
        let bits = (slots * BITS_PER_KEY).max(4_096).next_power_of_two() as u64;
        let generation = || (0..bits / 64).map(|_| AtomicU64::new(0)).collect();
        Seen {
            generations: [generation(), generation()],
            current: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            per_generation: slots.max(1) as u64,
            bits,
        }
    }

    /// The bits of `tag`: double hashing of two mixes of it (a tag is already pseudorandom).
    fn bits_of(&self, tag: u64) -> impl Iterator<Item = u64> + '_ {
        let h1 = tag.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let h2 = (tag ^ (tag >> 31)).wrapping_mul(0xC2B2_AE3D_27D4_EB4F) | 1;
        (0..HASHES).map(move |i| (h1.wrapping_add(i.wrapping_mul(h2)) >> 17) & (self.bits - 1))
    }

    /// Records the key of `tag` as removed while full.
    pub(crate) fn mark(&self, tag: u64) {
        // Relaxed: see the module docs.
        let generation = &self.generations[self.current.load(Ordering::Relaxed) as usize & 1];
        for bit in self.bits_of(tag) {
            // Relaxed: see the module docs.
            generation[(bit / 64) as usize].fetch_or(1 << (bit % 64), Ordering::Relaxed);
        }
        // Relaxed: a count of insertions, only for the turn of generations.
        if self.taken.fetch_add(1, Ordering::Relaxed) + 1 == self.per_generation {
            self.turn();
        }
    }

    /// Whether the key of `tag` was recorded (or its bits are set by others).
    pub(crate) fn holds(&self, tag: u64) -> bool {
        self.generations.iter().any(|generation| {
            self.bits_of(tag)
                // Relaxed: see the module docs.
                .all(|bit| {
                    generation[(bit / 64) as usize].load(Ordering::Relaxed) & (1 << (bit % 64)) != 0
                })
        })
    }

    /// Clears the older generation and makes it current. Only the insertion that filled the
    /// current one does it, so turns do not overlap unless a generation fills during one.
    fn turn(&self) {
        // Relaxed: see the module docs.
        let older = (self.current.load(Ordering::Relaxed) + 1) & 1;
        for word in self.generations[older as usize].iter() {
            // Relaxed: see the module docs.
            word.store(0, Ordering::Relaxed);
        }
        // Relaxed: see the module docs.
        self.current.store(older, Ordering::Relaxed);
        self.taken.store(0, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
#[path = "seen_tests.rs"]
mod tests;
