//! [`Tiered`]: a [`Keyed`] policy whose quota a closure picks per request (free, paid).

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
    /// The same policy with a quota chosen per request (tiers: free, paid), passed to
    /// [`KeyedBucket::with_quota`](cellrate::KeyedBucket::with_quota). A tiered policy stands alone (the
    /// all-or-nothing check uses the limiter's own quota); a refund goes through the key's
    /// handle with the quota the request was charged under.
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
        let bucket = limiter.key(&key).with_quota(&quota);
        let answer = check_or_book(
            how.ticket(),
            || limiter.key(&key).with_quota(&quota).check_n(cost),
            |wait| bucket.reserve_n(cost, wait),
        );
        verdict.quotas[0] = Some(quota);
        let partition = how.partition().map(|h| h.hash_one((0usize, &key)));
        alone(verdict, answer, (|| quota, &quota), partition, how, key);
        None
    }

    fn refund(&self, booked: Booked<E::Key>, _cost: u32) {
        if let Some(ticket) = booked.tickets[0] {
            if let Some(reservation) = self.keyed.limiter().attach(ticket) {
                reservation.cancel();
            }
        }
    }

    fn start_upkeep(&self) {
        sealed::Local::start_upkeep(&self.keyed)
    }
}
