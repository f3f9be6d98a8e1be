//! `KeyedBucket`: one key's bucket of a [`KeyedLimiter`], as a value: what refunds,
//! reservations and all-or-nothing checks ([`all_of`](crate::all_of)) operate on.

use super::table::{initial_tat, Outcome, Request, Table};
use super::KeyedLimiter;
use crate::all_of::{sealed, Limit, Undo};
use crate::bucket::Change;
use crate::clock::Clock;
use crate::gcra;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;
use crate::reservation::Reservation;
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
}

impl<K: Hash + Eq, C: Clock> KeyedLimiter<K, C> {
    /// The bucket of `key`, for refunds, reservations and [`all_of`](crate::all_of).
    pub fn key<Q>(&self, key: &Q) -> KeyedBucket<'_, C>
    where
        K: Borrow<Q>,
        Q: Hash + ?Sized,
    {
        KeyedBucket {
            table: &self.table,
            fp: self.fingerprint(key),
            quota: self.quota,
            clock: &self.clock,
            start_empty: self.start_empty,
        }
    }

    /// Gives back `n` tokens of `key`'s bucket now, never beyond the capacity; a key the
    /// limiter does not hold (a full bucket) is left alone.
    pub fn refund_key_n<Q>(&self, key: &Q, n: u32)
    where
        K: Borrow<Q>,
        Q: Hash + ?Sized,
    {
        self.key(key).refund_n(n)
    }

    /// Books `cost` tokens of `key`'s bucket, ready within `max_wait`; the rules of
    /// [`Limiter::reserve_n`](crate::Limiter::reserve_n).
    pub fn reserve_key_n<Q>(
        &self,
        key: &Q,
        cost: u32,
        max_wait: Duration,
    ) -> Result<Reservation<'_, C>, Denied>
    where
        K: Borrow<Q>,
        Q: Hash + ?Sized,
    {
        self.key(key).reserve_n(cost, max_wait)
    }
}

impl<'a, C: Clock> KeyedBucket<'a, C> {
    /// Spends `cost` tokens now if all are there.
    pub fn check_n(&self, cost: u32) -> Result<Allowed, Denied> {
        self.check_n_at(cost, self.clock.now())
    }

    /// Spends `cost` tokens at `now` if all are there.
    pub fn check_n_at(&self, cost: u32, now: Nanos) -> Result<Allowed, Denied> {
        self.book(cost, now.as_u64(), 0).map(|(_, b)| b.allowed)
    }

    /// Gives back `n` tokens now, never beyond the capacity.
    pub fn refund_n(&self, n: u32) {
        self.refund_n_at(n, self.clock.now())
    }

    /// Gives back `n` tokens at `now`, never beyond the capacity.
    pub fn refund_n_at(&self, n: u32, now: Nanos) {
        let (now, quota) = (now.as_u64(), &self.quota);
        self.table
            .rewrite(self.fp, |tat| gcra::refund(tat, now, n, quota));
    }

    /// Books `cost` tokens now, ready within `max_wait`.
    pub fn reserve_n(&self, cost: u32, max_wait: Duration) -> Result<Reservation<'a, C>, Denied> {
        self.reserve_n_at(cost, max_wait, self.clock.now())
    }

    /// Books `cost` tokens at `now`, ready within `max_wait`.
    pub fn reserve_n_at(
        &self,
        cost: u32,
        max_wait: Duration,
        now: Nanos,
    ) -> Result<Reservation<'a, C>, Denied> {
        let max_wait_ns = u64::try_from(max_wait.as_nanos()).unwrap_or(u64::MAX);
        let (change, booking) = self.book(cost, now.as_u64(), max_wait_ns)?;
        Ok(Reservation::of_key(self.clone(), cost, booking, change))
    }

    /// The clock of the limiter this bucket belongs to.
    pub(crate) fn clock(&self) -> &'a C {
        self.clock
    }

    /// Spends or books `cost` tokens at `now`, creating the bucket if needed.
    fn book(&self, cost: u32, now: u64, max_wait_ns: u64) -> Outcome {
        self.table.spend(&Request {
            fp: self.fp,
            now,
            cost,
            quota: &self.quota,
            start_empty: self.start_empty,
            max_wait_ns,
        })
    }

    /// Puts the TAT from before `change` back if `change` is still the last write.
    pub(crate) fn restore(&self, change: Change) -> bool {
        self.table.rewrite(self.fp, |tat| {
            (tat == change.after).then_some(change.before)
        })
    }

    /// Gives back `n` tokens of a booking; see [`gcra::unwind_booking`].
    pub(crate) fn unbook(&self, change: Change, n: u32, now: u64) {
        let quota = &self.quota;
        self.table.rewrite(self.fp, |tat| {
            gcra::unwind_booking(tat, now, change.after, n, quota)
        });
    }

    /// Spends `n` more tokens unconditionally (a settled reservation that cost more). A key
    /// evicted since (its bucket had become full) is charged by a booking of the extra
    /// tokens, however long it has to wait.
    pub(crate) fn force(&self, n: u32, now: u64) {
        let quota = &self.quota;
        if !self
            .table
            .rewrite(self.fp, |tat| Some(gcra::force(tat, now, n, quota)))
        {
            let _ = self.book(n.min(quota.burst()), now, u64::MAX);
        }
    }
}

impl<C: Clock> Clone for KeyedBucket<'_, C> {
    fn clone(&self) -> Self {
        KeyedBucket { ..*self }
    }
}

impl<C: Clock> sealed::Sealed for KeyedBucket<'_, C> {}

impl<C: Clock> Limit for KeyedBucket<'_, C> {
    fn now(&self) -> Nanos {
        self.clock.now()
    }

    fn evaluate(&self, cost: u32, now: Nanos) -> Result<Allowed, Denied> {
        let now = now.as_u64();
        let tat = self.table.tat_of(self.fp);
        let tat = tat.unwrap_or_else(|| initial_tat(self.start_empty, now, &self.quota));
        gcra::spend(tat, now, cost, &self.quota).map(|(_, allowed)| allowed)
    }

    fn spend_undoable(&self, cost: u32, now: Nanos) -> Result<(Undo, Allowed), Denied> {
        let (change, booking) = self.book(cost, now.as_u64(), 0)?;
        Ok((Undo { change }, booking.allowed))
    }

    fn undo(&self, undo: Undo, cost: u32, now: Nanos) {
        let (change, now, quota) = (undo.change, now.as_u64(), &self.quota);
        if change.before == change.after || self.restore(change) {
            return;
        }
        self.table.rewrite(self.fp, |tat| {
            gcra::unwind_spend(tat, now, change.before, change.after, cost, quota)
        });
    }
}
