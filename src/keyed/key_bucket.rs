//! `KeyedBucket`: one key's bucket of a [`KeyedLimiter`], as a value: what refunds,
//! reservations and all-or-nothing checks ([`all_of`](crate::all_of)) operate on.

use super::default_quota::DefaultQuota;
use super::table::{Request, Table};
use super::KeyedLimiter;
use crate::all_of::{sealed, Limit};
use crate::clock::{lagged, now_for, Clock};
use crate::engine::bucket_ref::{BucketRef, TatStore};
use crate::engine::counting::Named;
use crate::engine::gcra::Booking;
use crate::engine::give_back::Receipt;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;
use crate::quota_change::QuotaChange;
use crate::reservation::{Reservation, Ticket};
#[cfg(feature = "async")]
use crate::wait::until_ready_n_on;
use crate::wait::wait_n_on;
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
    /// The quota of [`with_quota`](Self::with_quota); `None`: the limiter's default quota as
    /// it is at each operation.
    own_quota: Option<Quota>,
    default_quota: &'a DefaultQuota,
    clock: &'a C,
    start_empty: bool,
    /// The limiter's name and counts, if it is named.
    named: Option<&'a Named>,
}

impl<K: Hash + Eq, C: Clock> KeyedLimiter<K, C> {
    /// The bucket of `key`: every operation on one key (checks, reservations, waits,
    /// [`all_of`](crate::all_of), a settle's extra cost) under the limiter's default quota as
    /// it is at each operation ([`set_default_quota`](Self::set_default_quota)), or the
    /// handle's own ([`KeyedBucket::with_quota`]). A cancel, or a settle below the cost, gives
    /// back under the quota of the booking, which is what it holds.
    #[inline]
    pub fn key<Q>(&self, key: &Q) -> KeyedBucket<'_, C>
    where
        K: Borrow<Q>,
        Q: Hash + ?Sized,
    {
        KeyedBucket {
            table: &self.table,
            fp: self.fingerprint(key),
            own_quota: None,
            default_quota: &self.quota,
            clock: self.clock(),
            start_empty: self.start_empty,
            named: self.named_ref(),
        }
    }
}

impl<'a, C: Clock> KeyedBucket<'a, C> {
    /// The same key under `quota` instead of the limiter's default: a tier (free, paid) for
    /// every operation of this handle, checks, reservations, waits and
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
        self.own_quota = Some(*quota);
        self
    }

    /// Carries the key's bucket over from quota `old` to this handle's quota by the rule `how`,
    /// now: for a key that changes tier. Without it, a key checked under another quota keeps
    /// its TAT ([`QuotaChange::KeepTime`]). A key the limiter does not hold is full, and stays
    /// so. One compare-and-swap: checks racing it lose no spend. Reservations of the key made
    /// before it give nothing back after it (their tokens were carried over by the rule).
    pub fn rebase_from(&self, old: &Quota, how: QuotaChange) {
        self.rebase_from_at(old, how, now_for(self.clock, &self.quota()))
    }

    /// [`rebase_from`](Self::rebase_from) at a time passed in.
    pub fn rebase_from_at(&self, old: &Quota, how: QuotaChange, now: Nanos) {
        let (now, new) = (now.as_u64(), self.quota());
        self.table
            .rewrite(self.fp, now, |tat| Some(how.rebase(tat, now, old, &new)));
    }

    /// The quota this handle's operations use now: its own, or the limiter's default.
    pub fn quota(&self) -> Quota {
        self.own_quota.unwrap_or_else(|| self.default_quota.get())
    }

    /// Spends one token now if there is one.
    #[inline]
    pub fn check(&self) -> Result<Allowed, Denied> {
        self.check_n(1)
    }

    /// [`check`](Self::check) at a time passed in.
    #[inline]
    pub fn check_at(&self, now: Nanos) -> Result<Allowed, Denied> {
        self.check_n_at(1, now)
    }

    /// Spends `cost` tokens now if all are there; the rules of
    /// [`Limiter::check_n`](crate::Limiter::check_n).
    // Inlined into the caller (the table's insert path stays out of line): called, a check
    // returns its 40-byte answer through memory, which a caller reading only `is_ok()` pays
    // for (BENCHMARKS.md, the keyed rows).
    #[inline(always)]
    pub fn check_n(&self, cost: u32) -> Result<Allowed, Denied> {
        let quota = self.quota();
        self.decide(cost, &quota, now_for(self.clock, &quota))
            .map_err(|denied| lagged(self.clock, &quota, denied))
    }

    /// Spends `cost` tokens at `now` if all are there.
    #[inline(always)]
    pub fn check_n_at(&self, cost: u32, now: Nanos) -> Result<Allowed, Denied> {
        self.decide(cost, &self.quota(), now)
    }

    /// The check of `cost` at `now` under `quota` (one reading of this key's quota), counted
    /// if the limiter is named.
    #[inline(always)]
    fn decide(&self, cost: u32, quota: &Quota, now: Nanos) -> Result<Allowed, Denied> {
        let request = Request {
            fp: self.fp,
            now: now.as_u64(),
            cost,
            quota,
            start_empty: self.start_empty,
            max_wait_ns: 0,
            force: false,
        };
        let decision = self.table.spend(&request).map(|(_, b)| b.allowed);
        if let Some(named) = self.named {
            named.record(cost, &decision);
        }
        decision
    }

    /// Whole tokens in the bucket now. Spends nothing and creates nothing.
    pub fn available(&self) -> u32 {
        let bucket = self.bucket_ref();
        bucket.available(bucket.now().as_u64())
    }

    /// [`available`](Self::available) at a time passed in.
    pub fn available_at(&self, now: Nanos) -> u32 {
        self.bucket_ref().available(now.as_u64())
    }

    /// Books `cost` tokens now, ready within `max_wait`; the rules of
    /// [`Limiter::reserve_n`](crate::Limiter::reserve_n). With a `max_wait` of zero it is a
    /// check that can be taken back ([`Reservation::cancel`]).
    pub fn reserve_n(&self, cost: u32, max_wait: Duration) -> Result<Reservation<'a, C>, Denied> {
        let bucket = self.bucket_ref();
        Reservation::book(bucket.clone(), cost, max_wait, bucket.now())
            .map_err(|denied| bucket.lagged(denied))
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
    /// [`Limiter::wait`](crate::Limiter::wait). A new key that finds no room in the table
    /// (under [`OverflowPolicy::DenyNewKeys`](crate::OverflowPolicy::DenyNewKeys), or any
    /// policy under [`start_empty`](crate::KeyedLimiterBuilder::start_empty)) waits for room
    /// too.
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
        wait_n_on(&self.bucket_ref(), self.named, cost, max_wait)
    }

    /// Waits asynchronously until `cost` tokens are there, if that takes at most `max_wait`;
    /// the rules of [`Limiter::until_ready_n`](crate::Limiter::until_ready_n).
    #[cfg(feature = "async")]
    pub async fn until_ready_n(&self, cost: u32, max_wait: Duration) -> Result<Allowed, Denied> {
        until_ready_n_on(&self.bucket_ref(), self.named, cost, max_wait).await
    }

    /// The reservation of a [`Ticket`] of this limiter ([`Reservation::detach`]), to cancel or
    /// settle later from elsewhere (a response body, another task); see
    /// [`KeyedLimiter::attach`].
    pub fn attach(&self, ticket: Ticket) -> Option<Reservation<'a, C>> {
        Reservation::attach(ticket, self.table, self.clock, Some(self.default_quota))
    }

    /// This key's bucket under the quota of this handle now, for every operation on it.
    fn bucket_ref(&self) -> BucketRef<'a, C> {
        BucketRef {
            store: self.table,
            id: self.fp,
            quota: self.quota(),
            clock: self.clock,
            start_empty: self.start_empty,
            follows: match self.own_quota {
                None => Some(self.default_quota),
                Some(_) => None,
            },
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

    fn named(&self) -> Option<&Named> {
        self.named
    }
}

impl<C: Clock> Limit for KeyedBucket<'_, C> {}

impl<K, C: Clock> KeyedLimiter<K, C> {
    /// The reservation of a [`Ticket`] this limiter issued ([`Reservation::detach`]), to
    /// cancel or settle it; `None` for another limiter's ticket. See
    /// [`Limiter::attach`](crate::Limiter::attach).
    pub fn attach(&self, ticket: Ticket) -> Option<Reservation<'_, C>> {
        Reservation::attach(ticket, &self.table, &self.clock, Some(&self.quota))
    }
}

/// A keyed table holds one TAT per fingerprint.
impl TatStore for Table {
    fn origin(&self) -> u64 {
        self.origin
    }

    #[inline]
    fn book(
        &self,
        id: u64,
        cost: u32,
        now: u64,
        max_wait_ns: u64,
        quota: &Quota,
        start_empty: bool,
    ) -> Result<(Receipt, Booking), Denied> {
        Table::book(
            self,
            &Request {
                fp: id,
                now,
                cost,
                quota,
                start_empty,
                max_wait_ns,
                force: false,
            },
        )
    }

    fn give_back(
        &self,
        id: u64,
        receipt: &Receipt,
        tokens: u32,
        quota: &Quota,
        now: &dyn Fn() -> u64,
    ) -> u64 {
        Table::give_back(self, id, receipt, tokens, quota, now)
    }

    fn force(&self, id: u64, tokens: u32, now: u64, quota: &Quota, start_empty: bool) {
        Table::force(self, id, tokens, now, quota, start_empty)
    }

    fn tat(&self, id: u64, now: u64, quota: &Quota, start_empty: bool) -> u64 {
        self.tat_or_new(id, now, quota, start_empty)
    }

    #[cfg(loom)]
    fn give_back_faulty(
        &self,
        _: &Receipt,
        _: u32,
        _: &dyn Fn() -> u64,
        _: crate::engine::give_back::GiveBackFault,
    ) -> u64 {
        unreachable!("a keyed table's faults are its `Broken` steps")
    }
}
