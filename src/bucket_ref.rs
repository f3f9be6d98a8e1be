//! `BucketRef`: one bucket, wherever its TAT lives, with what reservations and all-or-nothing
//! checks do to it.
//!
//! A [`Limiter`](crate::Limiter) keeps its TAT in its own [`Bucket`]; a keyed limiter keeps one
//! per key in its table. Both implement [`TatStore`], so that reservations and
//! [`all_of`](crate::all_of) are written once, against a [`BucketRef`], and the core modules
//! never name the keyed ones. These are the cold paths (a cancellation, a rollback): the
//! checks themselves call their bucket directly.

use crate::bucket::Change;
use crate::clock::Clock;
use crate::gcra::{self, Booking};
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;

/// Where the TATs of buckets live, each found by an `id` (a keyed table's fingerprint; a
/// limiter's cell).
pub trait TatStore: Sync {
    /// Books `cost` tokens at `now`, ready within `max_wait_ns`, creating the bucket if it is
    /// absent; returns the change made and the booking. The rules of [`gcra::reserve`].
    fn book(
        &self,
        id: u64,
        cost: u32,
        now: u64,
        max_wait_ns: u64,
        quota: &Quota,
        start_empty: bool,
    ) -> Result<(Change, Booking), Denied>;

    /// Rewrites the bucket's TAT to `f(TAT)` by compare-and-swap, retried with the TAT it
    /// finds (`None` from `f`: leave it). An absent bucket is left alone. Returns whether a
    /// write happened.
    fn rewrite(&self, id: u64, f: &mut dyn FnMut(u64) -> Option<u64>) -> bool;

    /// The bucket's TAT at `now`: the stored one, or for a bucket the store does not hold,
    /// the one a new bucket starts from. Creates nothing.
    fn tat(&self, id: u64, now: u64, quota: &Quota, start_empty: bool) -> u64;

    /// Deliberately broken write: stores `tat` without a compare-and-swap. Only the loom
    /// models' broken twins call it.
    #[cfg(loom)]
    fn store_racy(&self, id: u64, tat: u64);
}

/// One bucket and everything needed to act on it: its store and id, the quota it is booked
/// under, its clock, and how a bucket the store does not hold starts.
pub struct BucketRef<'a, C: Clock + ?Sized> {
    pub(crate) store: &'a dyn TatStore,
    pub(crate) id: u64,
    pub(crate) quota: Quota,
    pub(crate) clock: &'a C,
    pub(crate) start_empty: bool,
}

impl<C: Clock + ?Sized> Clone for BucketRef<'_, C> {
    fn clone(&self) -> Self {
        BucketRef { ..*self }
    }
}

impl<'a, C: Clock + 'a> BucketRef<'a, C> {
    /// The same bucket with its clock behind `dyn Clock`, for [`all_of`](crate::all_of)'s
    /// mixed lists.
    #[inline]
    pub(crate) fn erased(self) -> BucketRef<'a, dyn Clock + 'a> {
        BucketRef {
            store: self.store,
            id: self.id,
            quota: self.quota,
            clock: self.clock,
            start_empty: self.start_empty,
        }
    }
}

impl<'a, C: Clock + ?Sized> BucketRef<'a, C> {
    /// The bucket's clock, now.
    #[inline]
    pub(crate) fn now(&self) -> Nanos {
        self.clock.now()
    }

    /// A refusal decided on [`now`](Self::now), its `retry_after` covering the reading's lag.
    #[inline]
    pub(crate) fn lagged_now(&self, denied: Denied) -> Denied {
        crate::clock::lagged_now(self.clock, denied)
    }

    /// Books `cost` tokens at `now`, ready within `max_wait_ns` (0: a check).
    #[inline]
    pub(crate) fn book(
        &self,
        cost: u32,
        now: u64,
        max_wait_ns: u64,
    ) -> Result<(Change, Booking), Denied> {
        self.store.book(
            self.id,
            cost,
            now,
            max_wait_ns,
            &self.quota,
            self.start_empty,
        )
    }

    /// The TAT at `now`, or the one a new bucket would start from.
    fn tat(&self, now: u64) -> u64 {
        self.store.tat(self.id, now, &self.quota, self.start_empty)
    }

    /// What a check of `cost` at `now` would answer, spending nothing.
    pub(crate) fn evaluate(&self, cost: u32, now: u64) -> Result<Allowed, Denied> {
        gcra::spend(self.tat(now), now, cost, &self.quota).map(|(_, a)| a)
    }

    /// Whole tokens at `now`, spending nothing.
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // only the keyed handle needs it
    pub(crate) fn available(&self, now: u64) -> u32 {
        gcra::available(self.tat(now), now, &self.quota)
    }

    /// Gives back `n` tokens at `now`; see [`gcra::refund`].
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // only the keyed handle needs it
    pub(crate) fn refund(&self, n: u32, now: u64) {
        let quota = &self.quota;
        self.store
            .rewrite(self.id, &mut |tat| gcra::refund(tat, now, n, quota));
    }

    /// Puts the TAT from before `change` back if `change` is still the last write.
    pub(crate) fn restore(&self, change: Change) -> bool {
        change.before == change.after
            || self.store.rewrite(self.id, &mut |tat| {
                (tat == change.after).then_some(change.before)
            })
    }

    /// Undoes `change`, a spend of `cost` tokens: back to the exact TAT before it if nothing
    /// has been written since, otherwise as [`gcra::unwind_spend`] says.
    pub(crate) fn undo(&self, change: Change, cost: u32, now: u64) {
        if self.restore(change) {
            return;
        }
        let quota = &self.quota;
        self.store.rewrite(self.id, &mut |tat| {
            gcra::unwind_spend(tat, now, change.before, change.after, cost, quota)
        });
    }

    /// Gives back `n` tokens of the booking `change`; see [`gcra::unwind_booking`].
    pub(crate) fn unbook(&self, change: Change, n: u32, now: u64) {
        let quota = &self.quota;
        self.store.rewrite(self.id, &mut |tat| {
            gcra::unwind_booking(tat, now, change.after, n, quota)
        });
    }

    /// Spends `n` more tokens unconditionally (a settled reservation that cost more). A
    /// bucket the store no longer holds (it had become full) is charged by a booking of the
    /// extra tokens, however long it has to wait.
    pub(crate) fn force(&self, n: u32, now: u64) {
        let quota = &self.quota;
        if !self
            .store
            .rewrite(self.id, &mut |tat| Some(gcra::force(tat, now, n, quota)))
        {
            let _ = self.book(n.min(quota.burst()), now, u64::MAX);
        }
    }

    /// Deliberately broken [`BucketRef::restore`]: stores the old TAT blindly. Only for loom.
    #[cfg(loom)]
    pub(crate) fn restore_racy(&self, change: Change) {
        self.store.store_racy(self.id, change.before)
    }
}
