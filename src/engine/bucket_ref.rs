//! `BucketRef`: one bucket, in a limiter's cells or a keyed table (both [`TatStore`]s), so
//! that reservations, waits and [`all_of`](crate::all_of) are written once. Cold paths only:
//! the checks call their bucket directly.

use crate::clock::{Clock, Reading};
use crate::engine::gcra::{self, Booking};
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

    /// Gives back `tokens` of the booking `receipt` under `quota` (the booking's), at times
    /// read by `now`; nothing if the bucket's tenure has ended since. Returns the credit.
    fn give_back(
        &self,
        id: u64,
        receipt: &Receipt,
        tokens: u32,
        quota: &Quota,
        now: &dyn Fn() -> u64,
    ) -> u64;

    /// Spends `tokens` more unconditionally at `now` in the bucket as it is (creating it if
    /// absent); refused, charging nothing, only where a keyed table has no room to create it.
    fn force(
        &self,
        id: u64,
        tokens: u32,
        now: u64,
        quota: &Quota,
        start_empty: bool,
    ) -> Result<(), Denied>;

    /// The bucket's TAT at `now`: the stored one, or for a bucket the store does not hold,
    /// the one a new bucket starts from. Creates nothing.
    fn tat(&self, id: u64, now: u64, quota: &Quota, start_empty: bool) -> u64;
}

/// One bucket and everything needed to act on it: its store and id, its quota, its clock and
/// how the limiter reads it, and how a bucket the store does not hold starts.
pub struct BucketRef<'a, C: Clock + ?Sized> {
    pub(crate) store: &'a dyn TatStore,
    pub(crate) id: u64,
    pub(crate) quota: Quota,
    pub(crate) clock: &'a C,
    pub(crate) reading: Reading,
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
            reading: self.reading,
            start_empty: self.start_empty,
        }
    }
}

impl<C: Clock + ?Sized> BucketRef<'_, C> {
    /// The bucket's time now: the reading every operation on the limiter uses, checks and
    /// give-backs alike (docs/design.md, section 3, *One reading per limiter*).
    #[inline]
    pub(crate) fn now(&self) -> Nanos {
        self.reading.now(self.clock)
    }

    #[inline]
    pub(crate) fn time(&self, at: Option<Nanos>) -> Nanos {
        at.unwrap_or_else(|| self.now())
    }

    /// A refusal decided at `at`, or on [`now`](Self::now) (then with its reading's lag added
    /// to `retry_after`).
    #[inline]
    pub(crate) fn lagged(&self, at: Option<Nanos>, denied: Denied) -> Denied {
        self.reading.lagged_unless(self.clock, at, denied)
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
    #[cfg(feature = "std")] // only the keyed handle needs it
    pub(crate) fn available(&self, now: u64) -> u32 {
        gcra::available(self.tat(now), now, &self.quota)
    }

    /// Gives back `tokens` of the booking `receipt` at `at`, or at the bucket's time.
    pub(crate) fn give_back(&self, receipt: &Receipt, tokens: u32, at: Option<Nanos>) -> u64 {
        let now = || self.time(at).as_u64();
        self.store
            .give_back(self.id, receipt, tokens, &self.quota, &now)
    }

    /// Spends `tokens` more unconditionally at `now` in the bucket as it is now (a settled
    /// booking that cost more; docs/design.md §4).
    pub(crate) fn force(&self, tokens: u32, now: u64) -> Result<(), Denied> {
        self.store
            .force(self.id, tokens, now, &self.quota, self.start_empty)
    }
}
