//! `Bucket`: one theoretical arrival time in an `AtomicU64`, updated by compare-and-swap.
//!
//! This is the whole concurrent protocol of a bucket: load, decide, return on a denial (no
//! write), `compare_exchange_weak`, and on failure spin briefly (crossbeam's `Backoff`) and
//! decide again with the value it returned.
//! Every operation (spend, reserve, refund, roll back) is that one loop around a different
//! pure function of `gcra`; [`BucketRef`](crate::bucket_ref::BucketRef) holds the rarer ones.
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
use crossbeam_utils::Backoff;

/// One GCRA bucket: 8 bytes of state.
#[derive(Debug)]
pub(crate) struct Bucket {
    tat: AtomicU64,
}

/// A write that took effect: the TAT before and after it, so that it can be rolled back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    pub(crate) before: u64,
    pub(crate) after: u64,
}

impl Bucket {
    /// A bucket whose theoretical arrival time is `tat` (0: full at every `now`).
    #[inline]
    pub(crate) fn new(tat: u64) -> Bucket {
        Bucket {
            tat: AtomicU64::new(tat),
        }
    }

    /// The CAS loop: applies `decide` to the current TAT until its result is stored. `decide`
    /// returns the TAT to store (the same value: nothing to store) and an answer, or an error
    /// that ends the loop without a write.
    #[inline(always)]
    pub(crate) fn update<T, E>(
        &self,
        mut decide: impl FnMut(u64) -> Result<(u64, T), E>,
    ) -> Result<(Change, T), E> {
        // Relaxed: see the module's orderings note.
        let mut current = self.tat.load(Ordering::Relaxed);
        let backoff = Backoff::new();
        loop {
            let (new, answer) = decide(current)?;
            let change = Change {
                before: current,
                after: new,
            };
            if new == current {
                return Ok((change, answer)); // nothing to store (a peek)
            }
            // Relaxed on both arms: see the module's orderings note.
            match self
                .tat
                .compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok((change, answer)),
                Err(actual) => {
                    // Spinning briefly after a lost race keeps the losers off the contended
                    // line while the winner's write lands, which raises throughput on one hot
                    // bucket at no cost to a single thread (see the `contention` group of
                    // `benches/core`).
                    backoff.spin();
                    current = actual;
                }
            }
        }
    }

    /// Spends `cost` tokens at `now` if the bucket holds them; see [`gcra::spend`].
    #[inline]
    pub(crate) fn spend(&self, cost: u32, now: u64, quota: &Quota) -> Result<Allowed, Denied> {
        self.update(|tat| gcra::spend(tat, now, cost, quota))
            .map(|(_, allowed)| allowed)
    }

    /// Gives back `n` tokens at `now`, never beyond the capacity; see [`gcra::refund`].
    #[inline]
    pub(crate) fn refund(&self, n: u32, now: u64, quota: &Quota) {
        let _ = self.update(|tat| {
            gcra::refund(tat, now, n, quota)
                .map(|new| (new, ()))
                .ok_or(())
        });
    }

    /// Whole tokens at `now`, spending nothing.
    #[inline]
    pub(crate) fn available(&self, now: u64, quota: &Quota) -> u32 {
        // Relaxed: see the module's orderings note.
        gcra::available(self.tat.load(Ordering::Relaxed), now, quota)
    }

    /// The theoretical arrival time.
    #[inline]
    pub(crate) fn load(&self) -> u64 {
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

    /// Deliberately broken write: stores `tat` without checking that nothing was written
    /// since. Only for loom.
    #[cfg(loom)]
    pub(crate) fn store_racy(&self, tat: u64) {
        self.tat.store(tat, Ordering::Relaxed);
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
