//! `Bucket`: one theoretical arrival time in an `AtomicU64`, updated by compare-and-swap.
//!
//! This is the whole concurrent protocol of a bucket: load, decide, return on a denial (no
//! write), `compare_exchange_weak`, and on failure spin briefly (crossbeam's `Backoff`) and
//! decide again with the value it returned.
//! Every operation (spend, reserve, refund, roll back) is that one loop around a different
//! pure function of `gcra`; [`BucketRef`](crate::bucket_ref::BucketRef) holds the rarer ones.
//!
//! A [`Limiter`](crate::Limiter)'s bucket can also be *moved*: a quota change replaces it by a
//! new bucket under the new quota (`quota_cells.rs`) and leaves [`MOVED`] in the old word.
//! [`MOVED`] is the last nanosecond of the clock, which no write ever stores as a TAT, so a
//! word that holds it is never written again: every operation that loads it goes to the new
//! bucket instead, and one that loaded the TAT before fails its compare-and-swap.
//!
//! # Atomic orderings
//! Every access is `Relaxed`. The TAT is the only data a decision reads or writes and it
//! publishes no other memory, so the modification order of this one word (which every atomic
//! read-modify-write respects, whatever its ordering) is all a correct count needs. The write of
//! [`MOVED`] is the one exception: it is `Release`, and publishes the new bucket
//! (`quota_cells.rs` says who acquires it).

use crate::gcra;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;
use crate::sync::{AtomicU64, Ordering};
use crossbeam_utils::Backoff;

/// The TAT of a bucket that a quota change has moved elsewhere (module docs). No operation
/// stores it as a TAT: a spend that would is denied as beyond the clock, and other writes stop
/// one nanosecond short of it.
pub(crate) const MOVED: u64 = u64::MAX;

/// The largest TAT a bucket stores.
pub(crate) const LAST_TAT: u64 = MOVED - 1;

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
    /// A bucket whose theoretical arrival time is `tat` (0: full at every `now`), at most
    /// [`LAST_TAT`].
    #[inline]
    pub(crate) fn new(tat: u64) -> Bucket {
        Bucket {
            tat: AtomicU64::new(tat.min(LAST_TAT)),
        }
    }

    /// The CAS loop: applies `decide` to the current TAT until its result is stored. `decide`
    /// returns the TAT to store (the same value: nothing to store) and an answer, or an error
    /// that ends the loop without a write (`Some`). A moved bucket decides nothing and is
    /// never written: `Err(None)`. A result of [`MOVED`] is stored as [`LAST_TAT`].
    #[inline(always)]
    pub(crate) fn update<T, E>(
        &self,
        mut decide: impl FnMut(u64) -> Result<(u64, T), E>,
    ) -> Result<(Change, T), Option<E>> {
        // Relaxed: see the module's orderings note.
        let mut current = self.tat.load(Ordering::Relaxed);
        let backoff = Backoff::new();
        loop {
            if current == MOVED {
                return Err(None);
            }
            let (new, answer) = decide(current).map_err(Some)?;
            let new = new.min(LAST_TAT);
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

    /// Spends `cost` tokens at `now` if the bucket holds them; see [`gcra::spend`]. `None`
    /// if the bucket has moved (nothing decided). The loop of [`Bucket::update`], written out
    /// for the hot path: a spend's new TAT is above the old one, so an admission always writes.
    #[inline(always)]
    pub(crate) fn spend(
        &self,
        cost: u32,
        now: u64,
        quota: &Quota,
    ) -> Option<Result<Allowed, Denied>> {
        // Relaxed: see the module's orderings note.
        let mut current = self.tat.load(Ordering::Relaxed);
        let backoff = Backoff::new();
        loop {
            // MOVED is looked for only where a decision from it can land: a spend of it is
            // beyond the clock, a refusal that can never pass, so the common refusal (one that
            // says when to retry) and every admission skip the comparison.
            let (new, allowed) = match gcra::spend_marked(current, now, cost, quota) {
                Ok(spent) => spent,
                Err(denied) if denied.can_pass() || current != MOVED => return Some(Err(denied)),
                Err(_) => return None,
            };
            if cost == 0 {
                // A peek: nothing to store.
                return (current != MOVED).then_some(Ok(allowed));
            }
            if new == MOVED {
                return Some(Err(gcra::unrepresentable_at(current, now, quota)));
            }
            // Relaxed on both arms: see the module's orderings note.
            match self
                .tat
                .compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(Ok(allowed)),
                Err(actual) => {
                    // As in `update`.
                    backoff.spin();
                    current = actual;
                }
            }
        }
    }

    /// Gives back `n` tokens at `now`, never beyond the capacity; see [`gcra::refund`].
    /// `false` if the bucket has moved (nothing given back).
    #[inline]
    pub(crate) fn refund(&self, n: u32, now: u64, quota: &Quota) -> bool {
        let given = self.update(|tat| {
            gcra::refund(tat, now, n, quota)
                .map(|new| (new, ()))
                .ok_or(())
        });
        !matches!(given, Err(None))
    }

    /// Whole tokens at `now`, spending nothing; `None` if the bucket has moved.
    #[inline]
    pub(crate) fn available(&self, now: u64, quota: &Quota) -> Option<u32> {
        // Relaxed: see the module's orderings note.
        let tat = self.tat.load(Ordering::Relaxed);
        (tat != MOVED).then(|| gcra::available(tat, now, quota))
    }

    /// Leaves [`MOVED`] in the word if it still holds `expected`: the last write of a moved
    /// bucket (`quota_cells.rs`). `Err` with the TAT found otherwise.
    pub(crate) fn mark_moved(&self, expected: u64) -> Result<(), u64> {
        // Release on success: publishes the bucket it moved to (`quota_cells.rs`); Relaxed on
        // failure: the TAT found is only decided on again.
        self.tat
            .compare_exchange(expected, MOVED, Ordering::Release, Ordering::Relaxed)
            .map(|_| ())
    }

    /// Sets the TAT of a bucket that no other thread can reach yet (a cell being made).
    pub(crate) fn reset(&self, tat: u64) {
        // Relaxed: published with the bucket (`quota_cells.rs`).
        self.tat.store(tat.min(LAST_TAT), Ordering::Relaxed);
    }

    /// The theoretical arrival time ([`MOVED`] for a moved bucket).
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
        assert_ne!(
            current, MOVED,
            "the racy twins run on a limiter that never changed"
        );
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
