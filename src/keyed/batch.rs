//! Checking many keys in one call (docs/design.md §6.3, *Batches*).

use super::KeyedLimiter;
use crate::clock::Clock;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use core::borrow::Borrow;
use core::hash::Hash;

/// How many keys ahead of the one being decided a batch has hashed and prefetched: enough for
/// a slot's miss to end before its key is decided; deeper gains little (`keyed_batch`).
const LOOKAHEAD: usize = 8;

impl<K: Hash + Eq, C: Clock> KeyedLimiter<K, C> {
    /// Spends each request's `cost` tokens of its key's bucket, one request after the other,
    /// at one reading of the clock, and answers one decision per request, in order (the same
    /// call and shape as `cellrate-redis`'s `RedisLimiter::check_many`).
    ///
    /// The decisions are exactly those of `limiter.at(now).key(&k).check_n(cost)` for each
    /// request in turn (a key listed twice sees its first spend). Each check is atomic on its
    /// own; the batch is not all-or-nothing ([`all_of`](crate::all_of) is). Faster than single
    /// checks on a table larger than the cache: the next few slots are fetched meanwhile.
    ///
    /// ```
    /// use cellrate::{KeyedLimiter, Quota};
    ///
    /// let limiter = KeyedLimiter::<String>::new(Quota::per_second(10).with_burst(2));
    /// let decisions = limiter.check_many(&[("alice", 1), ("bob", 2), ("alice", 2)]);
    /// let allowed: Vec<bool> = decisions.iter().map(Result::is_ok).collect();
    /// assert_eq!(allowed, [true, true, false]);
    /// ```
    pub fn check_many<Q>(&self, requests: &[(&Q, u32)]) -> Vec<Result<Allowed, Denied>>
    where
        K: Borrow<Q>,
        Q: Hash + ?Sized,
    {
        let (reading, clock) = (self.reading(), self.clock());
        let mut decisions = self.check_many_at(requests, reading.now(clock));
        for decision in &mut decisions {
            if let Err(denied) = decision {
                *denied = reading.lagged(clock, *denied);
            }
        }
        decisions
    }

    pub(crate) fn check_many_at<Q>(
        &self,
        requests: &[(&Q, u32)],
        now: Nanos,
    ) -> Vec<Result<Allowed, Denied>>
    where
        K: Borrow<Q>,
        Q: Hash + ?Sized,
    {
        let now = now.as_u64();
        let mut decisions = Vec::with_capacity(requests.len());
        let decide = |(fp, cost): (u64, u32)| {
            let request = self.request(fp, cost, now);
            self.table
                .spend(&request)
                .map(|(_, booking)| booking.allowed)
        };
        // Requests hashed and prefetched, not yet decided: `queued` of them from `oldest`.
        let mut ahead = [(0u64, 0u32); LOOKAHEAD];
        let (mut oldest, mut queued) = (0, 0);
        for &(key, cost) in requests {
            let fp = self.fingerprint(key);
            self.table.prefetch_home(fp);
            if queued == LOOKAHEAD {
                decisions.push(decide(ahead[oldest]));
                ahead[oldest] = (fp, cost);
                oldest = (oldest + 1) % LOOKAHEAD;
            } else {
                ahead[(oldest + queued) % LOOKAHEAD] = (fp, cost);
                queued += 1;
            }
        }
        for k in 0..queued {
            decisions.push(decide(ahead[(oldest + k) % LOOKAHEAD]));
        }
        if let Some(named) = self.named_ref() {
            for (decision, &(_, cost)) in decisions.iter().zip(requests) {
                named.record(cost, decision);
            }
        }
        decisions
    }
}
