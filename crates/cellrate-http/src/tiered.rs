//! [`Tiered`]: a [`Keyed`] policy whose quota a closure picks per request (free, paid).
//!
//! A quota is part of a bucket's identity ([`KeyedBucket::with_quota`](cellrate::KeyedBucket::with_quota)):
//! a key has one bucket per tier it is charged under, each decided under that tier's quota
//! alone, in the one table of the policy's limiter. So a tier is exact by construction (no
//! conversion between quotas, no rule to pick), and:
//! - a key that moves to another tier (an upgrade) starts there as a new key does: full, or
//!   empty under [`start_empty`](cellrate::KeyedLimiterBuilder::start_empty); what it spent
//!   stays with its bucket in the old tier, found again (refilled by the time gone) if it moves
//!   back;
//! - the tier must be a property of the key (the plan of an API key), never something the
//!   client picks per request: a closure that reads a header the client sets would let it spend
//!   each tier's bucket in turn;
//! - a key charged under several tiers holds a slot of the table for each until it is idle:
//!   size `max_keys` for the buckets, not the keys;
//! - every tier's bucket reads the clock as the limiter's own quota says
//!   ([`Limiter::with_clock`](cellrate::Limiter::with_clock) says how).

use super::backend::{self, How, Pending, Verdict};
use super::headers::PolicyInfo;
use super::key::{KeyExtractor, RequestHead};
use super::local::{alone, check_or_book, sealed, Booked};
use super::policy::Keyed;
use cellrate::{Clock, Quota};
use std::hash::BuildHasher;

/// A [`Keyed`] policy whose quota a closure picks per request: see
/// [`Keyed::quota_per_request`].
pub struct Tiered<E: KeyExtractor, C: Clock, F> {
    keyed: Keyed<E, C>,
    quota_of: F,
}

impl<E: KeyExtractor, C: Clock> Keyed<E, C> {
    /// The same policy with a quota chosen per request (tiers: free, paid) from the request
    /// and its key: each request is charged to the key's bucket under that quota
    /// ([`KeyedBucket::with_quota`](cellrate::KeyedBucket::with_quota)), one bucket per key and
    /// tier (the module docs say what follows). Choose the tier from what the client cannot
    /// change per request, such as its API key's plan. A tiered policy stands alone (the
    /// all-or-nothing check uses the limiter's own quota); a refund gives the booking back to
    /// the bucket the request was charged to.
    pub fn quota_per_request<F>(self, quota_of: F) -> Tiered<E, C, F>
    where
        F: Fn(&RequestHead<'_>, &E::Key) -> Quota + Send + Sync + 'static,
    {
        Tiered {
            keyed: self,
            quota_of,
        }
    }
}

impl<E, C, F> backend::sealed::Backend for Tiered<E, C, F>
where
    E: KeyExtractor,
    C: Clock + Send + Sync + 'static,
    F: Fn(&RequestHead<'_>, &E::Key) -> Quota + Send + Sync + 'static,
{
    // The key and its booking (under the quota it was charged with).
    type Ticket = Booked<E::Key>;

    fn policies(&self) -> Vec<PolicyInfo> {
        backend::sealed::Backend::policies(&self.keyed)
    }

    fn decide(
        &self,
        head: &RequestHead<'_>,
        cost: u32,
        how: &How<'_>,
        verdict: &mut Verdict<Self::Ticket>,
    ) -> Option<Pending<Self::Ticket>> {
        let key = match sealed::Local::keys(&self.keyed, head, how.missing()) {
            Ok(Some(key)) => key,
            Ok(None) => return None,
            Err(no_key) => {
                no_key.record(verdict);
                return None;
            }
        };
        let quota = (self.quota_of)(head, &key);
        let limiter = self.keyed.limiter();
        // The key's bucket under this tier: another bucket than under any other quota.
        let bucket = limiter.key(&key).with_quota(quota);
        let answer = check_or_book(
            how.ticket(),
            || limiter.key(&key).with_quota(quota).check_n(cost),
            |wait| bucket.reserve(cost, wait),
        );
        verdict.quotas[0] = Some(quota);
        let partition = how.partition().map(|h| h.hash_one((0usize, &key)));
        alone(verdict, answer, (|| quota, &quota), partition, how, key);
        None
    }

    fn refund(&self, mut booked: Booked<E::Key>, _cost: u32) {
        // The ticket names the tier's bucket it was booked on; the limiter issued it, so
        // `attach` takes it (a ticket of another limiter would come back, and book nothing).
        if let Some(ticket) = booked.tickets[0].take() {
            if let Ok(reservation) = self.keyed.limiter().attach(ticket) {
                reservation.cancel();
            }
        }
    }

    fn start_upkeep(&self) {
        sealed::Local::start_upkeep(&self.keyed)
    }
}
