//! `BucketRef`: one bucket, wherever its TAT lives, with what reservations and all-or-nothing
//! checks do to it.
//!
//! A [`Limiter`](crate::Limiter) keeps its TAT in its own cells; a keyed limiter keeps one per
//! key in its table. Both implement [`TatStore`], so that reservations and
//! [`all_of`](crate::all_of) are written once, against a [`BucketRef`], and the core modules
//! never name the keyed ones. These are the cold paths (a booking, a give-back): the checks
//! themselves call their bucket directly.

use crate::clock::{lagged, now_for, Clock};
use crate::engine::gcra::{self, Booking};
#[cfg(loom)]
use crate::engine::give_back::GiveBackFault;
use crate::engine::give_back::Receipt;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;

/// Where the TATs of buckets live, each found by an `id` (a keyed table's fingerprint; a
/// limiter has one bucket and ignores it).
pub trait TatStore: Sync {
    /// An id of the limiter this store belongs to, unique in the process: what a detached
    /// reservation ([`Ticket`](crate::Ticket)) is checked against.
    fn origin(&self) -> u64;

    /// Books `cost` tokens at `now`, ready within `max_wait_ns`, creating the bucket if it is
    /// absent; returns the booking's receipt and the booking. The rules of [`gcra::reserve`].
    fn book(
        &self,
        id: u64,
        cost: u32,
        now: u64,
        max_wait_ns: u64,
        quota: &Quota,
        start_empty: bool,
    ) -> Result<(Receipt, Booking), Denied>;

    /// Gives back `tokens` of the booking `receipt` under `quota` (for a limiter: the quota of
    /// the cell booked on), at times read by `now` (`give_back.rs`); nothing if the bucket's
    /// tenure has ended since. Returns the credit given back, in nanoseconds.
    fn give_back(
        &self,
        id: u64,
        receipt: &Receipt,
        tokens: u32,
        quota: &Quota,
        now: &dyn Fn() -> u64,
    ) -> u64;

    /// Spends `tokens` more unconditionally at `now` in the bucket's current tenure (creating
    /// it if absent): the extra cost of a settled booking.
    fn force(&self, id: u64, tokens: u32, now: u64, quota: &Quota, start_empty: bool);

    /// The bucket's TAT at `now`: the stored one, or for a bucket the store does not hold,
    /// the one a new bucket starts from. Creates nothing.
    fn tat(&self, id: u64, now: u64, quota: &Quota, start_empty: bool) -> u64;

    /// [`give_back`](Self::give_back) with the step `fault` broken. Only the loom models'
    /// broken twins call it, on a [`Limiter`](crate::Limiter).
    #[cfg(loom)]
    fn give_back_faulty(
        &self,
        receipt: &Receipt,
        tokens: u32,
        now: &dyn Fn() -> u64,
        fault: GiveBackFault,
    ) -> u64;
}

/// A quota that can change under a bucket: a keyed limiter's default quota, which a key's
/// handle without a quota of its own follows. A booking's extra cost (a settle above it) is
/// charged under the quota as it is then.
pub(crate) trait LiveQuota: Sync {
    /// The quota now.
    fn now(&self) -> Quota;
}

/// One bucket and everything needed to act on it: its store and id, the quota it is booked
/// under, its clock, and how a bucket the store does not hold starts.
pub struct BucketRef<'a, C: Clock + ?Sized> {
    pub(crate) store: &'a dyn TatStore,
    pub(crate) id: u64,
    pub(crate) quota: Quota,
    pub(crate) clock: &'a C,
    pub(crate) start_empty: bool,
    /// The quota the bucket follows, if it can change under a booking (`quota` is then the
    /// quota of the booking).
    pub(crate) follows: Option<&'a dyn LiveQuota>,
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
            follows: self.follows,
        }
    }
}

impl<C: Clock + ?Sized> BucketRef<'_, C> {
    /// The bucket's time now: the reading every operation on a bucket under this quota uses,
    /// checks and give-backs alike (docs/design.md, section 3, *One time per bucket*).
    #[inline]
    pub(crate) fn now(&self) -> Nanos {
        now_for(self.clock, &self.quota)
    }

    /// A refusal decided on [`now`](Self::now), its `retry_after` covering the reading's lag.
    #[inline]
    pub(crate) fn lagged(&self, denied: Denied) -> Denied {
        lagged(self.clock, &self.quota, denied)
    }

    /// Books `cost` tokens at `now`, ready within `max_wait_ns` (0: a check).
    #[inline]
    pub(crate) fn book(
        &self,
        cost: u32,
        now: u64,
        max_wait_ns: u64,
    ) -> Result<(Receipt, Booking), Denied> {
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

    /// Gives back `tokens` of the booking `receipt` at the bucket's time, read after each load
    /// of the TAT (`give_back.rs`); `at` instead if given (the `_at` forms).
    pub(crate) fn give_back(&self, receipt: &Receipt, tokens: u32, at: Option<Nanos>) -> u64 {
        let now = || at.unwrap_or_else(|| self.now()).as_u64();
        self.store
            .give_back(self.id, receipt, tokens, &self.quota, &now)
    }

    /// [`give_back`](Self::give_back) with the step `fault` broken. Only for loom.
    #[cfg(loom)]
    pub(crate) fn give_back_faulty(
        &self,
        receipt: &Receipt,
        tokens: u32,
        at: Option<Nanos>,
        fault: GiveBackFault,
    ) -> u64 {
        let now = || at.unwrap_or_else(|| self.now()).as_u64();
        self.store.give_back_faulty(receipt, tokens, &now, fault)
    }

    /// Spends `tokens` more unconditionally at `now` (a settled booking that cost more), in
    /// the bucket as it is now: under the live quota of a limiter, in a keyed bucket created
    /// again if it was removed.
    pub(crate) fn force(&self, tokens: u32, now: u64) {
        let quota = self.follows.map_or(self.quota, |live| live.now());
        self.store
            .force(self.id, tokens, now, &quota, self.start_empty)
    }
}
