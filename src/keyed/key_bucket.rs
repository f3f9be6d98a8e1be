//! `KeyedBucket`: one key's bucket of a [`KeyedLimiter`], as a value: what refunds,
//! reservations and all-or-nothing checks ([`all_of`](crate::all_of)) operate on.

use super::table::{initial_tat, Request, Table};
use super::KeyedLimiter;
use crate::all_of::{sealed, Limit};
use crate::bucket::Change;
use crate::bucket_ref::{BucketRef, TatStore};
use crate::clock::{lagged, lagged_now, now_for, Clock};
use crate::gcra::Booking;
use crate::named::{count_wait, Named};
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;
use crate::quota_change::QuotaChange;
use crate::reservation::{owner, BucketOwner, Reservation};
use core::borrow::Borrow;
use core::hash::Hash;
use core::time::Duration;

/// The bucket of one key of a [`KeyedLimiter`], found by its fingerprint. Cheap to make (one
/// hash) and to copy; it holds no lock and no slot: every operation looks the key up again.
///
/// ```
/// use cellrate::{all_of, KeyedLimiter, Limiter, ManualClock, Quota};
///
/// let clock = ManualClock::new();
/// let per_user = KeyedLimiter::<u64, _>::with_clock(Quota::per_second(5), clock.clone());
/// let global = Limiter::with_clock(Quota::per_second(100), clock.clone());
/// let user = per_user.key(&42);
/// assert!(all_of(&[&user, &global]).check_n(5).is_ok());
/// assert!(all_of(&[&user, &global]).check().is_err()); // the user's bucket is empty
/// assert_eq!(global.available(), 95); // and the global one kept only the first spend
/// ```
pub struct KeyedBucket<'a, C: Clock> {
    table: &'a Table,
    fp: u64,
    quota: Quota,
    clock: &'a C,
    start_empty: bool,
    /// The limiter's name and counts, if it is named.
    named: Option<&'a Named>,
}

impl<K: Hash + Eq, C: Clock> KeyedLimiter<K, C> {
    /// The bucket of `key`: every operation on one key (checks, refunds, reservations, waits,
    /// [`all_of`](crate::all_of)) under the limiter's quota.
    pub fn key<Q>(&self, key: &Q) -> KeyedBucket<'_, C>
    where
        K: Borrow<Q>,
        Q: Hash + ?Sized,
    {
        KeyedBucket {
            table: &self.table,
            fp: self.fingerprint(key),
            quota: *self.quota(),
            clock: self.clock(),
            start_empty: self.start_empty,
            named: self.named_ref(),
        }
    }
}

impl<'a, C: Clock> KeyedBucket<'a, C> {
    /// The same key under `quota` instead of the limiter's default: a tier (free, paid) for
    /// every operation of this handle, checks, refunds, reservations, waits and
    /// [`all_of`](crate::all_of) alike. The key's bucket is the same whatever its quota; see
    /// [`rebase_from`](Self::rebase_from) for a key that changes tier.
    ///
    /// ```
    /// use cellrate::{KeyedLimiter, ManualClock, Quota};
    ///
    /// let free = Quota::per_second(1).with_burst(5);
    /// let pro = Quota::per_second(10).with_burst(50);
    /// let limiter = KeyedLimiter::<&str, _>::with_clock(free, ManualClock::new());
    /// let alice = limiter.key("alice").with_quota(&pro);
    /// assert!(alice.check_n(20).is_ok());
    /// assert_eq!(alice.available(), 30);
    /// ```
    pub fn with_quota(mut self, quota: &Quota) -> Self {
        self.quota = *quota;
        self
    }

    /// Carries the key's bucket over from quota `old` to this handle's quota by the rule `how`,
    /// now: for a key that changes tier. Without it, a key checked under another quota keeps
    /// its TAT ([`QuotaChange::KeepTime`]). A key the limiter does not hold is full, and stays
    /// so. One compare-and-swap: checks racing it lose no spend.
    pub fn rebase_from(&self, old: &Quota, how: QuotaChange) {
        self.rebase_from_at(old, how, self.clock.now())
    }

    /// [`rebase_from`](Self::rebase_from) at a time passed in.
    pub fn rebase_from_at(&self, old: &Quota, how: QuotaChange, now: Nanos) {
        let (now, new) = (now.as_u64(), &self.quota);
        self.table
            .rewrite(self.fp, |tat| Some(how.rebase(tat, now, old, new)));
    }

    /// The quota this handle's operations use.
    pub fn quota(&self) -> &Quota {
        &self.quota
    }

    /// Spends one token now if there is one.
    pub fn check(&self) -> Result<Allowed, Denied> {
        self.check_n(1)
    }

    /// [`check`](Self::check) at a time passed in.
    pub fn check_at(&self, now: Nanos) -> Result<Allowed, Denied> {
        self.check_n_at(1, now)
    }

    /// Spends `cost` tokens now if all are there; the rules of
    /// [`Limiter::check_n`](crate::Limiter::check_n).
    pub fn check_n(&self, cost: u32) -> Result<Allowed, Denied> {
        self.check_n_at(cost, now_for(self.clock, &self.quota))
            .map_err(|denied| lagged(self.clock, &self.quota, denied))
    }

    /// Spends `cost` tokens at `now` if all are there.
    pub fn check_n_at(&self, cost: u32, now: Nanos) -> Result<Allowed, Denied> {
        let decision = self.book(cost, now.as_u64(), 0).map(|(_, b)| b.allowed);
        if let Some(named) = self.named {
            named.record(cost, &decision);
        }
        decision
    }

    /// Whole tokens in the bucket now. Spends nothing and creates nothing.
    pub fn available(&self) -> u32 {
        self.available_at(now_for(self.clock, &self.quota))
    }

    /// [`available`](Self::available) at a time passed in.
    pub fn available_at(&self, now: Nanos) -> u32 {
        self.bucket_ref().available(now.as_u64())
    }

    /// Gives back one token now; see [`refund_n`](Self::refund_n).
    pub fn refund(&self) {
        self.refund_n(1)
    }

    /// Gives back `n` tokens now, never beyond the capacity; a key the limiter does not hold
    /// (a full bucket) is left alone.
    pub fn refund_n(&self, n: u32) {
        self.refund_n_at(n, self.clock.now())
    }

    /// [`refund_n`](Self::refund_n) at a time passed in.
    pub fn refund_n_at(&self, n: u32, now: Nanos) {
        self.bucket_ref().refund(n, now.as_u64())
    }

    /// Books `cost` tokens now, ready within `max_wait`; the rules of
    /// [`Limiter::reserve_n`](crate::Limiter::reserve_n).
    pub fn reserve_n(&self, cost: u32, max_wait: Duration) -> Result<Reservation<'a, C>, Denied> {
        self.reserve_n_at(cost, max_wait, self.clock.now())
            .map_err(|denied| lagged_now(self.clock, denied))
    }

    /// [`reserve_n`](Self::reserve_n) at a time passed in.
    pub fn reserve_n_at(
        &self,
        cost: u32,
        max_wait: Duration,
        now: Nanos,
    ) -> Result<Reservation<'a, C>, Denied> {
        Reservation::book(self.bucket_ref(), cost, max_wait, now)
    }

    /// Blocks the thread until one token is there, however long that takes; the rules of
    /// [`Limiter::wait`](crate::Limiter::wait).
    pub fn wait(&self) -> Result<Allowed, Denied> {
        self.wait_n(1, Duration::MAX)
    }

    /// Waits asynchronously until one token is there, however long that takes; the rules of
    /// [`Limiter::until_ready`](crate::Limiter::until_ready).
    #[cfg(feature = "async")]
    pub async fn until_ready(&self) -> Result<Allowed, Denied> {
        self.until_ready_n(1, Duration::MAX).await
    }

    /// Blocks the thread until `cost` tokens are there, if that takes at most `max_wait`; the
    /// rules of [`Limiter::wait_n`](crate::Limiter::wait_n).
    pub fn wait_n(&self, cost: u32, max_wait: Duration) -> Result<Allowed, Denied> {
        let booking = self.reserve_n(cost, max_wait);
        count_wait(self.named, cost, &booking);
        Ok(booking?.wait_blocking())
    }

    /// Waits asynchronously until `cost` tokens are there, if that takes at most `max_wait`;
    /// the rules of [`Limiter::until_ready_n`](crate::Limiter::until_ready_n).
    #[cfg(feature = "async")]
    pub async fn until_ready_n(&self, cost: u32, max_wait: Duration) -> Result<Allowed, Denied> {
        let booking = self.reserve_n(cost, max_wait);
        count_wait(self.named, cost, &booking);
        Ok(booking?.ready().await)
    }

    /// Spends or books `cost` tokens at `now`, creating the bucket if needed.
    fn book(&self, cost: u32, now: u64, max_wait_ns: u64) -> Result<(Change, Booking), Denied> {
        self.table.book(
            self.fp,
            cost,
            now,
            max_wait_ns,
            &self.quota,
            self.start_empty,
        )
    }

    /// This key's bucket, for reservations and [`all_of`](crate::all_of).
    fn bucket_ref(&self) -> BucketRef<'a, C> {
        BucketRef {
            store: self.table,
            id: self.fp,
            quota: self.quota,
            clock: self.clock,
            start_empty: self.start_empty,
        }
    }
}

impl<C: Clock> Clone for KeyedBucket<'_, C> {
    fn clone(&self) -> Self {
        KeyedBucket { ..*self }
    }
}

impl<C: Clock> sealed::Sealed for KeyedBucket<'_, C> {
    fn bucket_ref(&self) -> BucketRef<'_, dyn Clock + '_> {
        KeyedBucket::bucket_ref(self).erased()
    }
}

impl<C: Clock> Limit for KeyedBucket<'_, C> {}

impl<K, C: Clock> owner::Owner<C> for KeyedLimiter<K, C> {
    fn store(&self) -> &dyn TatStore {
        &self.table
    }

    fn clock(&self) -> &C {
        &self.clock
    }
}

impl<K, C: Clock> BucketOwner<C> for KeyedLimiter<K, C> {}

/// A keyed table holds one TAT per fingerprint.
impl TatStore for Table {
    #[inline]
    fn book(
        &self,
        id: u64,
        cost: u32,
        now: u64,
        max_wait_ns: u64,
        quota: &Quota,
        start_empty: bool,
    ) -> Result<(Change, Booking), Denied> {
        self.spend(&Request {
            fp: id,
            now,
            cost,
            quota,
            start_empty,
            max_wait_ns,
        })
    }

    fn rewrite(&self, id: u64, f: &mut dyn FnMut(u64) -> Option<u64>) -> bool {
        Table::rewrite(self, id, f)
    }

    fn tat(&self, id: u64, now: u64, quota: &Quota, start_empty: bool) -> u64 {
        self.tat_of(id)
            .unwrap_or_else(|| initial_tat(start_empty, now, quota))
    }

    #[cfg(loom)]
    fn store_racy(&self, _id: u64, _tat: u64) {
        unreachable!("the loom models break only a Limiter's writes")
    }
}
