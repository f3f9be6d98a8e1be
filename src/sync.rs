//! The one place that names atomic types.
//!
//! Under `cfg(loom)` the atomics are loom's, so that the models in `loom-tests/` explore every
//! interleaving of the real code. With the `portable-atomic` feature the 64-bit atomics come
//! from portable-atomic (for targets without native 64-bit compare-and-swap). Otherwise they are
//! `core`'s. No other module names an atomic type directly; statistics counters take theirs
//! from [`counter`].
//!
//! The keyed table's slot words ([`SlotWord`]) are these 64-bit atomics, except under loom,
//! where they are a sequentially consistent stand-in (below).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicPtr, AtomicU64, Ordering};

#[cfg(all(not(loom), feature = "portable-atomic"))]
pub(crate) use portable_atomic::{AtomicU64, Ordering};
// Pointer-sized atomics are native wherever there is an atomic pointer at all.
#[cfg(all(not(loom), feature = "portable-atomic"))]
pub(crate) use core::sync::atomic::{fence, AtomicPtr};

#[cfg(all(not(loom), not(feature = "portable-atomic")))]
pub(crate) use core::sync::atomic::{fence, AtomicPtr, AtomicU64, Ordering};

/// A value written once by one thread before a `Release` store publishes it, and only read
/// after: the quotas that changes publish (`quota_cells.rs`, `keyed/default_quota.rs`). Under
/// loom it is loom's `UnsafeCell`, so that a model catches a read the write does not
/// happen-before (a torn or stale quota); otherwise it is the plain value.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct Published<T>(T);

#[cfg(not(loom))]
impl<T> Published<T> {
    pub(crate) fn new(value: T) -> Self {
        Published(value)
    }

    #[inline(always)]
    pub(crate) fn get(&self) -> &T {
        &self.0
    }
}

#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct Published<T>(loom::cell::UnsafeCell<Option<T>>);

// SAFETY:
// - the value is written once, in `new`, before the cell is shared; later accesses only read
//   it (`get`), and loom checks that each read happens after the write.
#[cfg(loom)]
unsafe impl<T: Send + Sync> Sync for Published<T> {}

#[cfg(loom)]
impl<T> Published<T> {
    /// Under loom the value is written after the cell is made, so that the model sees the
    /// write as a step of its own that every read must happen after.
    pub(crate) fn new(value: T) -> Self {
        let cell = Published(loom::cell::UnsafeCell::new(None));
        // SAFETY:
        // - the cell was made just above and nothing else refers to it yet.
        cell.0.with_mut(|p| unsafe { *p = Some(value) });
        cell
    }

    pub(crate) fn get(&self) -> &T {
        // SAFETY:
        // - the value is never written after `new` (no `&mut` to it exists); loom checks that
        //   this read happens after that write, which is the property the models test.
        let value = self.0.with(|p| unsafe { (*p).as_ref() });
        value.expect("a published value is written before it is shared")
    }

    /// Deliberately broken: rewrites the value while it may be read. Only for the broken
    /// twins, which loom must catch.
    pub(crate) fn overwrite_racy(&self, value: T) {
        // SAFETY: none; this is the bug the twins exist to show (loom reports the race).
        self.0.with_mut(|p| unsafe { *p = Some(value) });
    }
}

/// Gives up the processor in a wait loop (loom's, so that a model can schedule another thread).
#[cfg(all(loom, feature = "std"))]
pub(crate) use loom::thread::yield_now;
#[cfg(all(not(loom), feature = "std"))]
pub(crate) use std::thread::yield_now;

// The keyed limiter's statistics (src/keyed/stats.rs) take their atomics directly: they are
// not part of any protocol, so the loom models do not interleave them.

/// One word of a keyed-table slot (src/keyed/table/slot.rs), wrapped there by the typed words.
#[cfg(all(not(loom), feature = "std"))]
pub(crate) use AtomicU64 as SlotWord;

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
    use super::{AtomicU64, Ordering};

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

/// Atomics for statistics counters (the keyed limiter's, the Redis limiter's) and for
/// [`CachedClock`](crate::CachedClock)'s reading: always the real ones, also under loom. They
/// order nothing and take no part in any protocol, so the models need not interleave them
/// (which would multiply their state space).
#[cfg(feature = "std")]
pub(crate) mod counter {
    #[cfg(not(feature = "portable-atomic"))]
    pub(crate) use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    #[cfg(feature = "portable-atomic")]
    pub(crate) use portable_atomic::{AtomicU64, AtomicUsize, Ordering};
}
