//! `KeyedBucket`: one key's bucket of a [`KeyedLimiter`], as a value: what checks with a cost,
//! reservations, waits and all-or-nothing checks ([`all_of`](crate::all_of)) operate on.

use super::table::{Request, Table};
use super::KeyedLimiter;
use crate::all_of::{sealed, Limit};
use crate::clock::{Clock, Reading};
use crate::engine::bucket_ref::{BucketRef, TatStore};
use crate::engine::counting::Named;
use crate::engine::gcra::Booking;
use crate::engine::give_back::Receipt;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;
use crate::reservation::{Reservation, Ticket};
#[cfg(feature = "async")]
use crate::wait::until_ready_on;
use crate::wait::wait_on;
use core::borrow::Borrow;
use core::hash::Hash;
use core::time::Duration;

/// The bucket of one key of a [`KeyedLimiter`], under the limiter's quota or the one
/// [`with_quota`](Self::with_quota) names. Cheap to make (one hash) and to clone; it holds no
/// lock and no slot. Its verbs follow [`Limiter`](crate::Limiter)'s rules.
///
/// ```
/// use cellrate::{all_of, KeyedLimiter, Limiter, ManualClock, Quota};
///
/// let clock = ManualClock::new();
/// let per_user = KeyedLimiter::<u64, _>::builder(Quota::per_second(5))
///     .clock(clock.clone())
///     .build();
/// let global = Limiter::with_clock(Quota::per_second(100), clock.clone());
/// let user = per_user.key(&42);
/// assert!(all_of(&[(&user, 5), (&global, 5)]).check().is_ok());
/// assert!(all_of(&[(&user, 1), (&global, 1)]).check().is_err()); // the user's bucket is empty
/// assert_eq!(global.available(), 95); // and the global one kept only the first spend
/// ```
pub struct KeyedBucket<'a, C: Clock> {
    table: &'a Table,
    key_fp: u64,
    /// The id of the bucket: the key's fingerprint under the limiter's quota, mixed with the
    /// quota under another one (`fingerprint::under_quota`).
    fp: u64,
    quota: Quota,
    default: Quota,
    clock: &'a C,
    reading: Reading,
    start_empty: bool,
    /// The time of [`KeyedLimiter::at`], if the handle came from there.
    at: Option<Nanos>,
    named: Option<&'a Named>,
}

impl<K: Hash + Eq, C: Clock> KeyedLimiter<K, C> {
    /// The bucket of `key` under the limiter's quota: checks of any cost, reservations, waits,
    /// [`all_of`](crate::all_of).
    #[inline]
    pub fn key<Q>(&self, key: &Q) -> KeyedBucket<'_, C>
    where
        K: Borrow<Q>,
        Q: Hash + ?Sized,
    {
        self.key_as(key, None)
    }

    /// [`key`](Self::key), its operations at `at` or at the limiter's time.
    #[inline]
    pub(crate) fn key_as<Q>(&self, key: &Q, at: Option<Nanos>) -> KeyedBucket<'_, C>
    where
        K: Borrow<Q>,
        Q: Hash + ?Sized,
    {
        let fp = self.fingerprint(key);
        KeyedBucket {
            table: &self.table,
            key_fp: fp,
            fp,
            quota: self.quota,
            default: self.quota,
            clock: self.clock(),
            reading: self.reading,
            start_empty: self.start_empty,
            at,
            named: self.named_ref(),
        }
    }
}

impl<'a, C: Clock> KeyedBucket<'a, C> {
    /// The bucket of the same key under `quota` (a tier: free, paid). A quota is part of a
    /// bucket's identity: the key has one bucket under each quota it is used with, each decided
    /// under that quota alone. A key that moves to another quota starts there as a new key
    /// does; its spending under the old quota stays with the old bucket.
    ///
    /// ```
    /// use cellrate::{KeyedLimiter, ManualClock, Quota};
    ///
    /// let free = Quota::per_second(1).with_burst(5);
    /// let pro = Quota::per_second(10).with_burst(50);
    /// let limiter = KeyedLimiter::<&str, _>::builder(free).clock(ManualClock::new()).build();
    /// let alice = limiter.key("alice").with_quota(pro);
    /// assert!(alice.check_n(20).is_ok());
    /// assert_eq!(alice.available(), 30);
    /// assert_eq!(limiter.key("alice").available(), 5); // her bucket under `free` is another
    /// ```
    pub fn with_quota(self, quota: Quota) -> Self {
        let fp = if quota == self.default {
            self.key_fp
        } else {
            super::fingerprint::under_quota(self.key_fp, &quota)
        };
        KeyedBucket { fp, quota, ..self }
    }

    /// Spends one token now if there is one.
    #[inline]
    pub fn check(&self) -> Result<Allowed, Denied> {
        self.check_n(1)
    }

    /// Spends `cost` tokens now if all are there.
    // Inlined into the caller (the table's insert path stays out of line): called, a check
    // returns its answer through memory, which a caller reading only `is_ok()` pays for
    // (BENCHMARKS.md, `keyed_paired`).
    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    pub fn check_n(&self, cost: u32) -> Result<Allowed, Denied> {
        let now = self.bucket_ref().time(self.at);
        let request = Request {
            fp: self.fp,
            now: now.as_u64(),
            cost,
            quota: &self.quota,
            start_empty: self.start_empty,
            max_wait_ns: 0,
            force: false,
        };
        let decision = self.table.spend(&request).map(|(_, b)| b.allowed);
        if let Some(named) = self.named {
            named.record(cost, &decision);
        }
        decision.map_err(|denied| self.reading.lagged_unless(self.clock, self.at, denied))
    }

    /// Whole tokens in the bucket now. Spends nothing and creates nothing.
    pub fn available(&self) -> u32 {
        let bucket = self.bucket_ref();
        bucket.available(bucket.time(self.at).as_u64())
    }

    /// Books `cost` tokens now, ready within `max_wait` ([`Reservation`]).
    pub fn reserve(&self, cost: u32, max_wait: Duration) -> Result<Reservation<'a, C>, Denied> {
        let bucket = self.bucket_ref();
        Reservation::book(bucket.clone(), cost, max_wait, bucket.time(self.at))
            .map_err(|denied| bucket.lagged(self.at, denied))
    }

    /// Blocks the thread until `cost` tokens are there, if that takes at most `max_wait`; a new
    /// key refused for lack of room waits for room too. Reads the limiter's clock, also on a
    /// handle from [`KeyedLimiter::at`].
    pub fn wait(&self, cost: u32, max_wait: Duration) -> Result<Allowed, Denied> {
        wait_on(&self.bucket_ref(), self.named, cost, max_wait)
    }

    /// Waits asynchronously until `cost` tokens are there, if that takes at most `max_wait`.
    #[cfg(feature = "async")]
    pub async fn until_ready(&self, cost: u32, max_wait: Duration) -> Result<Allowed, Denied> {
        until_ready_on(&self.bucket_ref(), self.named, cost, max_wait).await
    }

    fn bucket_ref(&self) -> BucketRef<'a, C> {
        BucketRef {
            store: self.table,
            id: self.fp,
            quota: self.quota,
            clock: self.clock,
            reading: self.reading,
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

    fn at(&self) -> Option<Nanos> {
        self.at
    }

    fn named(&self) -> Option<&Named> {
        self.named
    }
}

impl<C: Clock> Limit for KeyedBucket<'_, C> {}

impl<K, C: Clock> KeyedLimiter<K, C> {
    /// The reservation of a [`Ticket`] this limiter issued, to cancel or settle it; the ticket
    /// back if another limiter issued it ([`Limiter::attach`](crate::Limiter::attach)).
    pub fn attach(&self, ticket: Ticket) -> Result<Reservation<'_, C>, Ticket> {
        Reservation::attach(ticket, &self.table, |id, quota, start_empty| BucketRef {
            store: &self.table,
            id,
            quota,
            clock: &self.clock,
            reading: self.reading,
            start_empty,
        })
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

    fn force(
        &self,
        id: u64,
        tokens: u32,
        now: u64,
        quota: &Quota,
        start_empty: bool,
    ) -> Result<(), Denied> {
        Table::force(self, id, tokens, now, quota, start_empty)
    }

    fn tat(&self, id: u64, now: u64, quota: &Quota, start_empty: bool) -> u64 {
        self.tat_or_new(id, now, quota, start_empty)
    }
}
