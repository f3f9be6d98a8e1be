//! Deciding with in-process limiters: at once, in `call`, with no allocation.

use super::backend::{sealed, How, Outcome, Pending, Verdict};
use super::headers::PolicyInfo;
use super::key::{KeyExtractor, RequestHead};
use super::policy::{sealed::Local, Slots, Tiered};
use super::state::{PolicyState, MAX_POLICIES};
use cellrate::{all_of, Allowed, Clock, Denied, Limit, Quota, Reservation, Ticket};
use core::time::Duration;
use std::hash::BuildHasher;

/// What an admission keeps to be given back after its response: the keys of the request and,
/// per policy, its booking.
pub struct Booked<K> {
    keys: K,
    tickets: [Option<Ticket>; MAX_POLICIES],
}

/// The answer of a check, or of a booking when a give-back may follow (`keep`): the booking's
/// ticket beside its answer.
pub(crate) fn check_or_book<'a, C: Clock + ?Sized + 'a>(
    keep: bool,
    check: impl FnOnce() -> Result<Allowed, Denied>,
    book: impl FnOnce(Duration) -> Result<Reservation<'a, C>, Denied>,
) -> (Result<Allowed, Denied>, Option<Ticket>) {
    if !keep {
        return (check(), None);
    }
    match book(Duration::ZERO) {
        Ok(reservation) => (Ok(reservation.allowed()), Some(reservation.detach())),
        Err(denied) => (Err(denied), None),
    }
}

impl<P: Local> sealed::Backend for P {
    type Ticket = Booked<P::Keys>;

    fn policies(&self) -> Vec<PolicyInfo> {
        let mut out = Vec::with_capacity(P::COUNT);
        self.describe(&mut out);
        out
    }

    #[inline(always)]
    fn decide(
        &self,
        head: &RequestHead<'_>,
        cost: u32,
        how: &How<'_>,
        verdict: &mut Verdict<Booked<P::Keys>>,
    ) -> Option<Pending<Booked<P::Keys>>> {
        self.decide_into(head, cost, how, verdict);
        None
    }

    fn refund(&self, booked: Booked<P::Keys>, _cost: u32) {
        let mut slots = Slots::new(None);
        self.fill(&booked.keys, 0, &mut slots);
        // The last policy's booking first: each is then on top of its bucket.
        for slot in slots.iter().collect::<Vec<_>>().into_iter().rev() {
            if let Some(ticket) = booked.tickets[slot.index] {
                slot.give_back(ticket);
            }
        }
    }

    fn start_upkeep(&self) {
        Local::start_upkeep(self)
    }
}

/// Records the `answer` of a policy decided alone (index 0) under `quota` (the live one, and
/// the one `RateLimit-Policy` states): its figures when a header will show them (a refusal
/// always does), the booking of an admission when asked for.
#[inline(always)]
pub(crate) fn alone<K>(
    verdict: &mut Verdict<Booked<K>>,
    (answer, ticket): (Result<Allowed, Denied>, Option<Ticket>),
    (quota, described): (&Quota, &Quota),
    partition: Option<u64>,
    how: &How<'_>,
    keys: K,
) {
    if how.figures || answer.is_err() {
        verdict.states[0] = Some(PolicyState {
            partition,
            ..PolicyState::of_answer(quota, &answer)
        });
        if quota != described {
            verdict.quotas[0] = Some(*quota);
        }
    }
    match answer {
        Ok(_) => {
            if how.ticket {
                let mut tickets = [None; MAX_POLICIES];
                tickets[0] = ticket;
                verdict.ticket = Some(Booked { keys, tickets });
            }
        }
        Err(denied) => verdict.outcome = Outcome::Refused(denied.retry_after()),
    }
}

/// Decides the policies of a set together, all or nothing, each at its own bucket's time.
pub(crate) fn together<P: Local>(
    set: &P,
    keys: P::Keys,
    cost: u32,
    how: &How<'_>,
    verdict: &mut Verdict<Booked<P::Keys>>,
) {
    let mut slots = Slots::new(how.partition);
    set.fill(&keys, 0, &mut slots);
    let mut limits: [Option<&dyn Limit>; MAX_POLICIES] = [None; MAX_POLICIES];
    for (i, slot) in slots.iter().enumerate() {
        limits[i] = Some(slot.limit());
    }
    let limits: [&dyn Limit; MAX_POLICIES] = match limits {
        [Some(a), b, c, d] => [a, b.unwrap_or(a), c.unwrap_or(a), d.unwrap_or(a)],
        [None, ..] => return, // every policy skipped: admitted, nothing to show
    };
    let set_of = all_of(&limits[..slots.len]);
    let mut tickets = [None; MAX_POLICIES];
    let answer = if how.ticket {
        set_of.reserve_n(cost, Duration::ZERO).map(|booked| {
            for (slot, reservation) in slots.iter().zip(booked) {
                tickets[slot.index] = Some(reservation.detach());
            }
        })
    } else {
        set_of.check_n(cost).map(|_| ())
    };
    // Each policy's own level, by a peek (cost 0 spends and creates nothing), only when a
    // header will show it.
    if how.figures || answer.is_err() {
        for slot in slots.iter() {
            verdict.states[slot.index] = Some(slot.state(&slot.check_n(0)));
            if slot.quota != *slot.described {
                verdict.quotas[slot.index] = Some(slot.quota);
            }
        }
    }
    match answer {
        Ok(()) => {
            if how.ticket {
                verdict.ticket = Some(Booked { keys, tickets });
            }
        }
        Err(denied) => verdict.outcome = Outcome::Refused(denied.retry_after()),
    }
}

impl<E, C, F> sealed::Backend for Tiered<E, C, F>
where
    E: KeyExtractor,
    C: Clock + Send + Sync + 'static,
    F: Fn(&RequestHead<'_>, &E::Key) -> Quota + Send + Sync + 'static,
{
    // The key and its booking (under the quota it was charged with).
    type Ticket = Booked<E::Key>;

    fn policies(&self) -> Vec<PolicyInfo> {
        sealed::Backend::policies(&self.keyed)
    }

    fn decide(
        &self,
        head: &RequestHead<'_>,
        cost: u32,
        how: &How<'_>,
        verdict: &mut Verdict<Self::Ticket>,
    ) -> Option<Pending<Self::Ticket>> {
        let key = match self.keyed.keys(head, how.missing) {
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
            how.ticket,
            || limiter.key(&key).with_quota(&quota).check_n(cost),
            |wait| bucket.reserve_n(cost, wait),
        );
        verdict.quotas[0] = Some(quota);
        let partition = how.partition.map(|h| h.hash_one((0usize, &key)));
        alone(verdict, answer, (&quota, &quota), partition, how, key);
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
        Local::start_upkeep(&self.keyed)
    }
}
