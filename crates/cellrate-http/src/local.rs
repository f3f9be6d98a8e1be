//! Deciding with in-process limiters: at once, in `call`, with no allocation.

use super::backend::{self, Decision, How, NoKey, Outcome, Pending, Verdict};
use super::headers::PolicyInfo;
use super::key::{MissingKey, RequestHead};
use super::slots::Slots;
use super::state::{PolicyState, MAX_POLICIES};
use cellrate::{all_of, Allowed, Clock, Denied, Limit, Quota, Reservation, Ticket};
use core::time::Duration;
use sealed::Local;

/// What an admission keeps to be given back after its response: the keys of the request and,
/// per policy, its booking.
pub struct Booked<K> {
    keys: K,
    pub(crate) tickets: [Option<Ticket>; MAX_POLICIES],
}

/// The answer of a check, or of a booking when a give-back may follow (`keep`): the booking's
/// ticket beside its answer. Always inlined into the policy's decision: out of line, the
/// answer and the ticket came back through memory.
#[inline(always)]
pub(crate) fn check_or_book<'a, C: Clock + ?Sized + 'a>(
    keep: bool,
    check: impl FnOnce() -> Result<Allowed, Denied>,
    book: impl FnOnce(Duration) -> Result<Reservation<'a, C>, Denied>,
) -> (Result<Allowed, Denied>, Option<Ticket>) {
    if !keep {
        return (check(), None);
    }
    booked(book)
}

/// The booking of [`check_or_book`], out of line: taken only when a refund is configured, it
/// would otherwise sit between the check's instructions and spread them over more cache lines.
#[cold]
#[inline(never)]
fn booked<'a, C: Clock + ?Sized + 'a>(
    book: impl FnOnce(Duration) -> Result<Reservation<'a, C>, Denied>,
) -> (Result<Allowed, Denied>, Option<Ticket>) {
    match book(Duration::ZERO) {
        Ok(reservation) => (Ok(reservation.allowed()), Some(reservation.detach())),
        Err(denied) => (Err(denied), None),
    }
}

impl<P: Local> backend::sealed::Backend for P {
    type Ticket = Booked<P::Keys>;

    fn policies(&self) -> Vec<PolicyInfo> {
        let mut out = Vec::with_capacity(P::COUNT);
        self.describe(&mut out);
        out
    }

    #[inline]
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

    // Always inlined: into the service's call, the admission's check and the inner service's
    // call are one run of code.
    #[inline(always)]
    fn decide_plain(
        &self,
        head: &RequestHead<'_>,
        cost: u32,
        how: &How<'_>,
    ) -> Option<Decision<Booked<P::Keys>>> {
        self.admit_plain(head, cost, how)
    }

    fn refund(&self, booked: Booked<P::Keys>, _cost: u32) {
        let mut slots = Slots::new(None);
        self.fill(&booked.keys, 0, &mut slots);
        let mut tickets = booked.tickets;
        // The last policy's booking first: each is then on top of its bucket.
        for slot in slots.iter().collect::<Vec<_>>().into_iter().rev() {
            if let Some(ticket) = tickets[slot.index].take() {
                slot.give_back(ticket);
            }
        }
    }

    fn start_upkeep(&self) {
        Local::start_upkeep(self)
    }
}

/// Records the `answer` of a policy decided alone (index 0) under `quota` (the live one, read
/// only when a figure needs it) and `described` (the one `RateLimit-Policy` states): its
/// figures when a header will show them (a refusal always does), the booking of an admission
/// when asked for.
#[inline]
pub(crate) fn alone<K>(
    verdict: &mut Verdict<Booked<K>>,
    decided: (Result<Allowed, Denied>, Option<Ticket>),
    (quota, described): (impl FnOnce() -> Quota, &Quota),
    partition: Option<u64>,
    how: &How<'_>,
    keys: K,
) {
    // Not taken apart here: the ticket (a hundred bytes) is read only for a booking, so it is
    // not copied out of the answer for a check.
    let answer = &decided.0;
    if how.figures() || answer.is_err() {
        let quota = quota();
        verdict.states[0] = Some(PolicyState {
            partition,
            ..PolicyState::of_answer(&quota, answer)
        });
        if quota != *described {
            verdict.quotas[0] = Some(quota);
        }
    }
    match answer {
        Ok(_) => {
            if how.ticket() {
                keep_ticket(verdict, decided.1, keys);
            }
        }
        Err(denied) => verdict.outcome = Outcome::Denied(denied.retry_after()),
    }
}

/// The verdict of a lone policy (index 0) that refused a request `plain`ly decided: out of
/// line, so that the admissions beside it stay compact.
#[cold]
#[inline(never)]
pub(crate) fn refused_alone<K>(
    denied: Denied,
    (quota, described): (impl FnOnce() -> Quota, &Quota),
    partition: Option<u64>,
    how: &How<'_>,
    keys: K,
) -> Decision<Booked<K>> {
    let mut verdict = Verdict::bare(Outcome::Allowed);
    alone(
        &mut verdict,
        (Err(denied), None),
        (quota, described),
        partition,
        how,
        keys,
    );
    Decision::Made(verdict)
}

/// The booking of a lone policy's admission, kept for its give-back. Out of line for the
/// reason of [`booked`].
#[cold]
#[inline(never)]
fn keep_ticket<K>(verdict: &mut Verdict<Booked<K>>, ticket: Option<Ticket>, keys: K) {
    let mut tickets = [const { None }; MAX_POLICIES];
    tickets[0] = ticket;
    verdict.ticket = Some(Box::new(Booked { keys, tickets }));
}

/// Decides the policies of a set together, all or nothing, each at its own bucket's time.
pub(crate) fn together<P: Local>(
    set: &P,
    keys: P::Keys,
    cost: u32,
    how: &How<'_>,
    verdict: &mut Verdict<Booked<P::Keys>>,
) {
    let mut slots = Slots::new(how.partition());
    set.fill(&keys, 0, &mut slots);
    let mut limits: [Option<&dyn Limit>; MAX_POLICIES] = [None; MAX_POLICIES];
    for (i, slot) in slots.iter().enumerate() {
        limits[i] = Some(slot.limit());
    }
    // The same cost in every policy; the unused places repeat the first and are not checked.
    let limits: [(&dyn Limit, u32); MAX_POLICIES] = match limits {
        [Some(a), b, c, d] => {
            [a, b.unwrap_or(a), c.unwrap_or(a), d.unwrap_or(a)].map(|l| (l, cost))
        }
        [None, ..] => return, // every policy skipped: admitted, nothing to show
    };
    let set_of = all_of(&limits[..slots.len]);
    let mut tickets = [const { None }; MAX_POLICIES];
    let answer = if how.ticket() {
        set_of.reserve(Duration::ZERO).map(|booked| {
            for (slot, reservation) in slots.iter().zip(booked) {
                tickets[slot.index] = Some(reservation.detach());
            }
        })
    } else {
        set_of.check().map(|_| ())
    };
    // Each policy's own level, by a peek (cost 0 spends and creates nothing), only when a
    // header will show it.
    if how.figures() || answer.is_err() {
        for slot in slots.iter() {
            verdict.states[slot.index] = Some(slot.state(&slot.check_n(0)));
            if slot.quota != *slot.described {
                verdict.quotas[slot.index] = Some(slot.quota);
            }
        }
    }
    match answer {
        Ok(()) => {
            if how.ticket() {
                verdict.ticket = Some(Box::new(Booked { keys, tickets }));
            }
        }
        Err(denied) => verdict.outcome = Outcome::Denied(denied.retry_after()),
    }
}

pub(crate) mod sealed {
    use super::*;

    /// What a set of in-process policies does for the layer.
    pub trait Local: Send + Sync + 'static {
        /// The clock all policies of a layer share.
        type Clock: Clock + Send + Sync + 'static;
        /// The keys of one request, one per keyed policy (`None`: skipped).
        type Keys: Send + 'static;
        /// How many policies.
        const COUNT: usize;

        /// The keys of this request, or why there is none and the choice of the policy that
        /// found none (`layer`'s when it made none).
        fn keys(&self, head: &RequestHead<'_>, layer: MissingKey) -> Result<Self::Keys, NoKey>;
        /// Decides a request in `verdict`: a policy alone by its own check, a set of several
        /// all or nothing.
        fn decide_into(
            &self,
            head: &RequestHead<'_>,
            cost: u32,
            how: &How<'_>,
            verdict: &mut Verdict<Booked<Self::Keys>>,
        );
        /// [`decide_plain`](backend::sealed::Backend::decide_plain) for these policies: the
        /// whole decision, then a verdict only for a request not admitted. A lone policy
        /// checks without one.
        #[inline]
        fn admit_plain(
            &self,
            head: &RequestHead<'_>,
            cost: u32,
            how: &How<'_>,
        ) -> Option<Decision<Booked<Self::Keys>>> {
            let mut verdict = Verdict::bare(Outcome::Allowed);
            self.decide_into(head, cost, how, &mut verdict);
            match verdict.outcome {
                Outcome::Allowed => None,
                _ => Some(Decision::Made(verdict)),
            }
        }
        /// The buckets of `keys` (with their `pk` when `out` has a hasher); `first` is this
        /// set's first policy index.
        fn fill<'a>(&'a self, keys: &Self::Keys, first: usize, out: &mut Slots<'a, Self::Clock>);
        /// The policies, in order.
        fn describe(&self, out: &mut Vec<PolicyInfo>);
        /// The first policy's clock.
        fn clock(&self) -> &Self::Clock;
        /// Starts the idle-key eviction threads.
        fn start_upkeep(&self);
    }
}
