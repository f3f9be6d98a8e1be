//! The one place that names atomic types.
//!
//! Under `cfg(loom)` the atomics are loom's, so that the loom models (`src/loom_tests.rs` lists
//! them) explore every interleaving of the real code. In those models the 64-bit atomic is
//! loom's behind a switch with which a broken twin turns its thread's compare-and-swaps into a
//! load, a comparison and a store (`sync/test_faults.rs`); nothing else in the crate knows of
//! it. With the `portable-atomic` feature the 64-bit atomics come from portable-atomic (for
//! targets without native 64-bit compare-and-swap). Otherwise they are `core`'s. No other
//! module names an atomic type directly; statistics counters take theirs from [`counter`].
//!
//! The keyed table's slot words ([`SlotWord`]) are these 64-bit atomics, except under loom,
//! where they are a sequentially consistent stand-in (below), and in the crate's other tests,
//! where each of their operations may first yield the processor (`sync/test_pauses.rs`).

#[cfg(all(loom, not(test)))]
pub(crate) use loom::sync::atomic::AtomicU64;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, Ordering};
#[cfg(all(loom, test))]
pub(crate) use test_faults::AtomicU64;

/// The broken compare-and-swaps of the loom models' twins.
#[cfg(all(loom, test))]
pub(crate) mod test_faults;

/// The pauses of the keyed table's stress tests.
#[cfg(all(test, not(loom), feature = "std"))]
pub(crate) mod test_pauses;

#[cfg(all(not(loom), feature = "portable-atomic"))]
pub(crate) use core::sync::atomic::fence;
#[cfg(all(not(loom), feature = "portable-atomic"))]
pub(crate) use portable_atomic::{AtomicU64, Ordering};

#[cfg(all(not(loom), not(feature = "portable-atomic")))]
pub(crate) use core::sync::atomic::{fence, AtomicU64, Ordering};

/// Gives up the processor in a wait loop (loom's, so that a model can schedule another thread).
#[cfg(all(loom, feature = "std"))]
pub(crate) use loom::thread::yield_now;
#[cfg(all(not(loom), feature = "std"))]
pub(crate) use std::thread::yield_now;

/// One round of a wait for another thread (a quota change waiting for the one before it):
/// loom's yield under loom, so that a model can schedule that thread; the operating system's
/// with `std`; a spin hint otherwise.
#[inline]
pub(crate) fn spin_wait() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(all(not(loom), feature = "std"))]
    std::thread::yield_now();
    #[cfg(all(not(loom), not(feature = "std")))]
    core::hint::spin_loop();
}

/// A number no other call in this process has returned: a limiter's id. Not part of any
/// protocol, so a plain counter, also under loom; pointer-sized, so that it exists wherever
/// atomics do.
pub(crate) fn next_id() -> u64 {
    static NEXT: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(1);
    // Relaxed: only uniqueness matters, which the read-modify-write gives whatever the order.
    NEXT.fetch_add(1, core::sync::atomic::Ordering::Relaxed) as u64
}

// The keyed limiter's statistics (src/keyed/stats.rs) take their atomics directly: they are
// not part of any protocol, so the loom models do not interleave them.

/// One word of a keyed-table slot (src/keyed/table/slot.rs), wrapped there by the typed words.
#[cfg(all(not(loom), not(test), feature = "std"))]
pub(crate) use AtomicU64 as SlotWord;

#[cfg(all(test, not(loom), feature = "std"))]
pub(crate) use test_pauses::SlotWord;

#[cfg(all(loom, feature = "std"))]
pub(crate) use loom_slot::SlotWord;

/// A sequentially consistent stand-in for a slot word under loom: a loom `AtomicU64` on which
/// every operation, loads included, is a `SeqCst` read-modify-write. Loom runs the threads of a
/// model one operation at a time, and a read-modify-write always reads the latest value of its
/// word, so every execution it explores is sequentially consistent, one step per operation.
///
/// The claim protocol of the keyed table rests on the single total order of `SeqCst`
/// operations on *different* words (docs/design.md), and loom's plain `SeqCst` loads do not
/// give that order (tokio-rs/loom#180: it lets two threads each miss the other's store). With
/// this stand-in the models check the protocol under sequential consistency, and the orderings
/// the real code uses are argued in its comments rather than checked by loom.
#[cfg(all(loom, feature = "std"))]
mod loom_slot {
    use loom::sync::atomic::{AtomicU64, Ordering};

    #[derive(Debug)]
    pub(crate) struct SlotWord {
        value: AtomicU64,
    }

    impl SlotWord {
        pub(crate) fn new(value: u64) -> SlotWord {
            SlotWord {
                value: AtomicU64::new(value),
            }
        }

        pub(crate) fn load(&self, _: Ordering) -> u64 {
            self.value.fetch_add(0, Ordering::SeqCst)
        }

        pub(crate) fn compare_exchange(
            &self,
            current: u64,
            new: u64,
            _: Ordering,
            _: Ordering,
        ) -> Result<u64, u64> {
            self.value
                .compare_exchange(current, new, Ordering::SeqCst, Ordering::SeqCst)
        }
    }
}

/// The lines of striped counts and the registry their lanes change hands through
/// (src/engine/lanes.rs, src/engine/tally.rs): a protocol, so loom's under loom.
#[cfg(feature = "std")]
pub(crate) mod lane {
    #[cfg(not(loom))]
    pub(crate) use super::counter::{AtomicU64, Ordering};
    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
    // Under loom only the model of the lanes takes them.
    #[cfg(all(loom, test))]
    pub(crate) use loom::sync::Mutex;
    #[cfg(not(loom))]
    pub(crate) use std::sync::Mutex;
}

/// Atomics for statistics counters (the keyed limiter's, the Redis limiter's): always the real
/// ones, also under loom. They
/// order nothing and take no part in any protocol, so the models need not interleave them
/// (which would multiply their state space).
#[cfg(feature = "std")]
pub(crate) mod counter {
    #[cfg(not(feature = "portable-atomic"))]
    pub(crate) use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    #[cfg(feature = "portable-atomic")]
    pub(crate) use portable_atomic::{AtomicU64, AtomicUsize, Ordering};
}
