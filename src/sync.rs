//! The one place that names atomic types: loom's under `cfg(loom)` (behind the twins' fault
//! switch, `sync/test_faults.rs`), portable-atomic's with that feature, else `core`'s
//! (docs/design.md §2 and §8). The keyed table's [`SlotWord`]s are these, except under loom (a
//! sequentially consistent stand-in) and in the stress tests (`sync/test_pauses.rs`).

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

/// One round of a wait for another thread: loom's yield under loom, so that a model can
/// schedule that thread; the operating system's with `std`; a spin hint otherwise.
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

/// One word of a keyed-table slot (src/keyed/table/slot.rs), wrapped there by the typed words.
#[cfg(all(not(loom), not(test), feature = "std"))]
pub(crate) use AtomicU64 as SlotWord;

#[cfg(all(test, not(loom), feature = "std"))]
pub(crate) use test_pauses::SlotWord;

#[cfg(all(loom, feature = "std"))]
pub(crate) use loom_slot::SlotWord;

/// A sequentially consistent stand-in for a slot word under loom: every operation, loads
/// included, a `SeqCst` read-modify-write, since loom's plain `SeqCst` loads do not give the
/// single total order the claim protocol rests on (tokio-rs/loom#180; docs/design.md §8).
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

/// Atomics for statistics counters and the seen filter: always the real ones, also under loom.
/// They take no part in any modelled protocol, and interleaving them would multiply the
/// models' state space.
#[cfg(feature = "std")]
pub(crate) mod counter {
    #[cfg(not(feature = "portable-atomic"))]
    pub(crate) use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    #[cfg(feature = "portable-atomic")]
    pub(crate) use portable_atomic::{AtomicU64, AtomicUsize, Ordering};
}
