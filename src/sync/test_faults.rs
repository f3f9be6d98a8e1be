//! The 64-bit atomic of the loom models: loom's, with a switch that a broken twin turns on for
//! one step of one thread ([`racy`]), under which every compare-and-swap that thread makes is a
//! load, a comparison and a store. Loom can then run another thread's write between the load
//! and the store, and the write is lost: the fault of a bucket word written without a
//! compare-and-swap, injected into the real code rather than into a copy of it.

use core::cell::Cell;
use loom::sync::atomic::Ordering;

loom::thread_local! {
    /// Whether this model thread's compare-and-swaps are broken.
    static RACY: Cell<bool> = Cell::new(false);
}

/// Runs `step` with the calling thread's compare-and-swaps made of a load, a comparison and a
/// store.
pub(crate) fn racy<T>(step: impl FnOnce() -> T) -> T {
    RACY.with(|racy| racy.set(true));
    let done = step();
    RACY.with(|racy| racy.set(false));
    done
}

/// loom's `AtomicU64`, with compare-and-swaps that [`racy`] breaks.
#[derive(Debug)]
pub(crate) struct AtomicU64(loom::sync::atomic::AtomicU64);

impl AtomicU64 {
    #[track_caller]
    pub(crate) fn new(value: u64) -> AtomicU64 {
        AtomicU64(loom::sync::atomic::AtomicU64::new(value))
    }

    #[track_caller]
    pub(crate) fn load(&self, order: Ordering) -> u64 {
        self.0.load(order)
    }

    #[track_caller]
    pub(crate) fn store(&self, value: u64, order: Ordering) {
        self.0.store(value, order)
    }

    #[track_caller]
    pub(crate) fn fetch_add(&self, value: u64, order: Ordering) -> u64 {
        self.0.fetch_add(value, order)
    }

    #[track_caller]
    pub(crate) fn fetch_sub(&self, value: u64, order: Ordering) -> u64 {
        self.0.fetch_sub(value, order)
    }

    #[track_caller]
    pub(crate) fn fetch_max(&self, value: u64, order: Ordering) -> u64 {
        self.0.fetch_max(value, order)
    }

    #[track_caller]
    pub(crate) fn fetch_update(
        &self,
        set: Ordering,
        fetch: Ordering,
        f: impl FnMut(u64) -> Option<u64>,
    ) -> Result<u64, u64> {
        self.0.fetch_update(set, fetch, f)
    }

    #[track_caller]
    pub(crate) fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        if RACY.with(Cell::get) {
            return self.load_compare_store(current, new, success, failure);
        }
        self.0.compare_exchange(current, new, success, failure)
    }

    /// The strong one: loom models no spurious failure.
    #[track_caller]
    pub(crate) fn compare_exchange_weak(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        self.compare_exchange(current, new, success, failure)
    }

    /// The broken compare-and-swap: two steps, with the orderings of the one it replaces.
    fn load_compare_store(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        let load = match (success, failure) {
            (Ordering::SeqCst, _) | (_, Ordering::SeqCst) => Ordering::SeqCst,
            (Ordering::Acquire | Ordering::AcqRel, _) | (_, Ordering::Acquire) => Ordering::Acquire,
            _ => Ordering::Relaxed,
        };
        let store = match success {
            Ordering::SeqCst => Ordering::SeqCst,
            Ordering::Release | Ordering::AcqRel => Ordering::Release,
            _ => Ordering::Relaxed,
        };
        let found = self.0.load(load);
        if found != current {
            return Err(found);
        }
        self.0.store(new, store);
        Ok(found)
    }
}
