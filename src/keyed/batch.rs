//! Checking many keys in one call: one clock reading for all of them, and each key's slot
//! fetched from memory while the keys before it are decided, so that their cache misses
//! overlap instead of following one another.

use super::KeyedLimiter;
use crate::clock::{lagged, now_for, Clock};
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use core::borrow::Borrow;
use core::hash::Hash;

/// How many keys ahead of the one being decided a batch has hashed and prefetched: far enough
/// that a slot's cache miss is over before its key is decided, and no further, since deeper
/// queues gain little (the batch group of the keyed benchmarks shows it).
const LOOKAHEAD: usize = 8;

impl<K: Hash + Eq, C: Clock> KeyedLimiter<K, C> {
    /// Spends `cost` tokens of each key's bucket, one key after the other, at one reading of
    /// the clock, and appends one decision per key to `decisions`, in the order of `keys`.
    ///
    /// The decisions are exactly those of [`check_key_n_at`](Self::check_key_n_at) called
    /// for each key in turn at that reading (a key listed twice sees its first spend). Each
    /// check is atomic on its own, as a single check is; the batch is not all-or-nothing (see
    /// [`all_of`](crate::all_of) for that). The batch is faster when the table does not fit in
    /// the cache: while one key is decided, the slots of the next few are already being
    /// fetched, and the clock is read once (see BENCHMARKS.md, `keyed_batch`).
    ///
    /// ```
    /// use cellrate::{KeyedLimiter, Quota};
    ///
    /// let limiter = KeyedLimiter::<String>::new(Quota::per_second(10).with_burst(1));
    /// let requests = ["alice", "bob", "alice"];
    /// let mut decisions = Vec::new();
    /// limiter.check_many_n(requests, 1, &mut decisions);
    /// let allowed: Vec<bool> = decisions.iter().map(Result::is_ok).collect();
    /// assert_eq!(allowed, [true, true, false]);
    /// ```
    pub fn check_many_n<'a, Q>(
        &self,
        keys: impl IntoIterator<Item = &'a Q>,
        cost: u32,
        decisions: &mut Vec<Result<Allowed, Denied>>,
    ) where
        K: Borrow<Q>,
        Q: Hash + ?Sized + 'a,
    {
        let (first, quota) = (decisions.len(), self.quota());
        self.check_many_n_at(keys, cost, now_for(&self.clock, &quota), decisions);
        for decision in &mut decisions[first..] {
            if let Err(denied) = decision {
                *denied = lagged(&self.clock, &quota, *denied);
            }
        }
    }

    /// [`check_many_n`](Self::check_many_n) at a time passed in.
    pub fn check_many_n_at<'a, Q>(
        &self,
        keys: impl IntoIterator<Item = &'a Q>,
        cost: u32,
        now: Nanos,
        decisions: &mut Vec<Result<Allowed, Denied>>,
    ) where
        K: Borrow<Q>,
        Q: Hash + ?Sized + 'a,
    {
        let (now, quota) = (now.as_u64(), self.quota());
        let first = decisions.len();
        let decide = |fp: u64| {
            let request = self.request(fp, cost, &quota, now, 0);
            self.table
                .spend(&request)
                .map(|(_, booking)| booking.allowed)
        };
        // Fingerprints hashed and prefetched, not yet decided: `queued` of them from `oldest`.
        let mut ahead = [0u64; LOOKAHEAD];
        let (mut oldest, mut queued) = (0, 0);
        for key in keys {
            let fp = self.fingerprint(key);
            self.table.prefetch_home(fp);
            if queued == LOOKAHEAD {
                decisions.push(decide(ahead[oldest]));
                ahead[oldest] = fp;
                oldest = (oldest + 1) % LOOKAHEAD;
            } else {
                ahead[(oldest + queued) % LOOKAHEAD] = fp;
                queued += 1;
            }
        }
        for k in 0..queued {
            decisions.push(decide(ahead[(oldest + k) % LOOKAHEAD]));
        }
        if let Some(named) = self.named_ref() {
            for decision in &decisions[first..] {
                named.record(cost, decision);
            }
        }
    }
}
