//! The buckets of one request: per policy, a shared limiter or one key's bucket, on the
//! stack.

use super::state::{PolicyState, MAX_POLICIES};
use cellrate::{
    Allowed, Clock, Denied, KeyedBucket, KeyedLimiter, Limit, Limiter, Quota, Reservation, Ticket,
};
use std::hash::RandomState;

/// One policy's bucket for this request.
pub struct Slot<'a, C: Clock> {
    pub(crate) index: usize,
    pub(crate) quota: Quota,
    /// The quota the layer's `RateLimit-Policy` states for this policy.
    pub(crate) described: &'a Quota,
    pub(crate) bucket: Bucket<'a, C>,
    /// A keyed hash of the key, for `pk`, when asked for.
    pub(crate) partition: Option<u64>,
}

/// A shared limiter or one key's bucket.
pub enum Bucket<'a, C: Clock> {
    /// A [`Global`](super::Global) policy.
    Global(&'a Limiter<C>),
    /// A [`Keyed`](super::Keyed) policy: the key's bucket, and its limiter, which alone turns
    /// the tickets of its bookings back into reservations.
    Keyed(KeyedBucket<'a, C>, &'a dyn Issuer<C>),
}

/// A keyed limiter whatever its key type, as far as a give-back needs it.
pub trait Issuer<C: Clock>: Sync {
    /// [`KeyedLimiter::attach`].
    fn attach(&self, ticket: Ticket) -> Result<Reservation<'_, C>, Ticket>;
}

impl<K, C: Clock + Sync> Issuer<C> for KeyedLimiter<K, C> {
    fn attach(&self, ticket: Ticket) -> Result<Reservation<'_, C>, Ticket> {
        KeyedLimiter::attach(self, ticket)
    }
}

impl<C: Clock> Slot<'_, C> {
    pub(crate) fn limit(&self) -> &dyn Limit {
        match &self.bucket {
            Bucket::Global(l) => *l,
            Bucket::Keyed(k, _) => k,
        }
    }

    pub(crate) fn check_n(&self, cost: u32) -> Result<Allowed, Denied> {
        match &self.bucket {
            Bucket::Global(l) => l.check_n(cost),
            Bucket::Keyed(k, _) => k.check_n(cost),
        }
    }

    /// What the headers show of this bucket after `answer`.
    pub(crate) fn state(&self, answer: &Result<Allowed, Denied>) -> PolicyState {
        PolicyState {
            partition: self.partition,
            ..PolicyState::of_answer(&self.quota, answer)
        }
    }

    /// Gives back the booking `ticket` of this policy's bucket. A ticket this policy's limiter
    /// did not issue comes back from `attach` and is dropped: it books nothing by itself.
    pub(crate) fn give_back(&self, ticket: Ticket) {
        let reservation = match &self.bucket {
            Bucket::Global(l) => l.attach(ticket),
            Bucket::Keyed(_, limiter) => limiter.attach(ticket),
        };
        if let Ok(reservation) = reservation {
            reservation.cancel();
        }
    }
}

/// The buckets of one request, on the stack.
pub struct Slots<'a, C: Clock> {
    pub(crate) items: [Option<Slot<'a, C>>; MAX_POLICIES],
    pub(crate) len: usize,
    /// The keyed hasher of `pk`, when the headers show it.
    pub(crate) hasher: Option<&'a RandomState>,
}

impl<'a, C: Clock> Slots<'a, C> {
    pub(crate) fn new(hasher: Option<&'a RandomState>) -> Self {
        Slots {
            items: Default::default(),
            len: 0,
            hasher,
        }
    }

    pub(crate) fn push(&mut self, slot: Slot<'a, C>) {
        self.items[self.len] = Some(slot);
        self.len += 1;
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Slot<'a, C>> {
        self.items[..self.len].iter().flatten()
    }
}
