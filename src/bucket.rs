//! `Bucket`: one theoretical arrival time in an `AtomicU64`, updated by compare-and-swap.
//!
//! This is the whole concurrent protocol of a bucket: load, decide, return on a denial (no
//! write), `compare_exchange_weak`, and on failure decide again with the value it returned.
//!
//! # Atomic orderings
//! Every access is `Relaxed`. The TAT is the only data a decision reads or writes and it
//! publishes no other memory, so the modification order of this one word (which every atomic
//! read-modify-write respects, whatever its ordering) is all a correct count needs. If a bucket
//! ever published other data through its TAT, the successful CAS would have to become `Release`
//! and the loads that read that data `Acquire`.

use crate::gcra;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;
use crate::sync::{AtomicU64, Ordering};

/// One GCRA bucket: 8 bytes of state.
#[derive(Debug)]
pub(crate) struct Bucket {
    tat: AtomicU64,
}

impl Bucket {
    /// A bucket whose theoretical arrival time is `tat` (0: full at every `now`).
    #[inline]
    pub(crate) fn new(tat: u64) -> Bucket {
        Bucket {
            tat: AtomicU64::new(tat),
        }
    }

    /// Spends `cost` tokens at `now` if the bucket holds them; see [`gcra::spend`].
    #[inline]
    pub(crate) fn spend(&self, cost: u32, now: u64, quota: &Quota) -> Result<Allowed, Denied> {
        // Relaxed: see the module's orderings note.
        let mut current = self.tat.load(Ordering::Relaxed);
        loop {
            let (new, allowed) = gcra::spend(current, now, cost, quota)?;
            if new == current {
                return Ok(allowed); // a peek: nothing to store
            }
            // Relaxed on both arms: see the module's orderings note.
            match self
                .tat
                .compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok(allowed),
                Err(actual) => current = actual,
            }
        }
    }

    /// Gives back `n` tokens at `now`, never beyond the capacity; see [`gcra::refund`].
    #[inline]
    pub(crate) fn refund(&self, n: u32, now: u64, quota: &Quota) {
        // Relaxed: see the module's orderings note.
        let mut current = self.tat.load(Ordering::Relaxed);
        while let Some(new) = gcra::refund(current, now, n, quota) {
            // Relaxed on both arms: see the module's orderings note.
            match self
                .tat
                .compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }

    /// Whole tokens at `now`, spending nothing.
    #[inline]
    pub(crate) fn available(&self, now: u64, quota: &Quota) -> u32 {
        // Relaxed: see the module's orderings note.
        gcra::available(self.tat.load(Ordering::Relaxed), now, quota)
    }

    /// The raw theoretical arrival time, for the loom models.
    #[cfg(loom)]
    #[inline]
    pub(crate) fn tat(&self) -> u64 {
        // Relaxed: see the module's orderings note.
        self.tat.load(Ordering::Relaxed)
    }

    /// Deliberately broken [`Bucket::spend`] (load + store instead of CAS): a lost update. Only
    /// for the loom models, which must catch it.
    #[cfg(loom)]
    pub(crate) fn spend_racy(&self, cost: u32, now: u64, quota: &Quota) -> Result<Allowed, Denied> {
        let current = self.tat.load(Ordering::Relaxed);
        let (new, allowed) = gcra::spend(current, now, cost, quota)?;
        self.tat.store(new, Ordering::Relaxed);
        Ok(allowed)
    }

    /// Deliberately broken [`Bucket::refund`] (load + store instead of CAS). Only for loom.
    #[cfg(loom)]
    pub(crate) fn refund_racy(&self, n: u32, now: u64, quota: &Quota) {
        let current = self.tat.load(Ordering::Relaxed);
        if let Some(new) = gcra::refund(current, now, n, quota) {
            self.tat.store(new, Ordering::Relaxed);
        }
    }
}
