//! Deciding with in-process limiters: at once, in `call`, with no allocation.

use super::backend::{sealed, Decision, How, Outcome, Verdict};
use super::headers::PolicyInfo;
use super::key::{KeyExtractor, RequestHead};
use super::policy::{sealed::Local, Slots, Tiered};
use super::state::{PolicyState, MAX_POLICIES};
use crate::clock::now_for;
use crate::{all_of, Clock, Limit, Nanos, Quota};
use std::hash::BuildHasher;

impl<P: Local> sealed::Backend for P {
    type Ticket = P::Keys;

    fn policies(&self) -> Vec<PolicyInfo> {
        let mut out = Vec::with_capacity(P::COUNT);
        self.describe(&mut out);
        out
    }

    fn decide(&self, head: &RequestHead<'_>, cost: u32, how: &How<'_>) -> Decision<P::Keys> {
        let keys = match self.keys(head, how.skip_missing) {
            Ok(keys) => keys,
            Err(e) => return Decision::Ready(Verdict::bare(Outcome::NoKey(e))),
        };
        let mut slots = Slots::new(how.partition);
        self.fill(&keys, 0, &mut slots);
        // One reading for the decision and the figures (the policies of a layer share a clock),
        // as stale as the shallowest quota allows: what each policy's own `check_n` reads.
        let tolerance = slots.iter().map(|s| s.quota.depth_ns() >> 4).min();
        let now = self.clock().now_within(Nanos::new(tolerance.unwrap_or(0)));
        let mut verdict = Verdict::bare(Outcome::Allowed);
        let answer = if slots.len == 1 {
            let slot = slots.iter().next().expect("one slot");
            let answer = slot.check_n_at(cost, now);
            if how.figures || answer.is_err() {
                verdict.states[slot.index] = Some(slot.state(&answer));
            }
            answer
        } else {
            let first = match slots.iter().next() {
                Some(slot) => slot.limit(),
                None => return Decision::Ready(verdict), // every policy skipped
            };
            let mut limits: [&dyn Limit; MAX_POLICIES] = [first; MAX_POLICIES];
            for (i, slot) in slots.iter().enumerate() {
                limits[i] = slot.limit();
            }
            let answer = all_of(&limits[..slots.len]).check_n_at(cost, now);
            // Each policy's own level, by a peek (cost 0 spends and creates nothing), only when
            // a header will show it.
            for slot in slots.iter().filter(|_| how.figures || answer.is_err()) {
                verdict.states[slot.index] = Some(slot.state(&slot.check_n_at(0, now)));
            }
            answer
        };
        match answer {
            Ok(_) => verdict.ticket = how.ticket.then_some(keys),
            Err(denied) => verdict.outcome = Outcome::Refused(denied.retry_after()),
        }
        Decision::Ready(verdict)
    }

    fn refund(&self, keys: P::Keys, cost: u32) {
        let mut slots = Slots::new(None);
        self.fill(&keys, 0, &mut slots);
        for slot in slots.iter() {
            slot.refund_n(cost);
        }
    }

    fn start_upkeep(&self) {
        Local::start_upkeep(self)
    }
}

impl<E, C, F> sealed::Backend for Tiered<E, C, F>
where
    E: KeyExtractor,
    C: Clock + Send + Sync + 'static,
    F: Fn(&RequestHead<'_>, &E::Key) -> Quota + Send + Sync + 'static,
{
    // The key and the quota it was charged under: the refund goes through the same quota.
    type Ticket = (E::Key, Quota);

    fn policies(&self) -> Vec<PolicyInfo> {
        sealed::Backend::policies(&self.keyed)
    }

    fn decide(&self, head: &RequestHead<'_>, cost: u32, how: &How<'_>) -> Decision<Self::Ticket> {
        let key = match self.keyed.keys(head, how.skip_missing) {
            Ok(Some(key)) => key,
            Ok(None) => return Decision::Ready(Verdict::bare(Outcome::Allowed)),
            Err(e) => return Decision::Ready(Verdict::bare(Outcome::NoKey(e))),
        };
        let quota = (self.quota_of)(head, &key);
        let limiter = self.keyed.limiter();
        let now = now_for(limiter.clock(), &quota);
        let answer = limiter.check_key_n_with_quota_at(&key, cost, &quota, now);
        let mut verdict = Verdict::bare(match answer {
            Ok(_) => Outcome::Allowed,
            Err(denied) => Outcome::Refused(denied.retry_after()),
        });
        if how.figures || answer.is_err() {
            let mut state = PolicyState::of_answer(&quota, &answer);
            state.partition = how.partition.map(|h| h.hash_one((0usize, &key)));
            verdict.states[0] = Some(state);
        }
        verdict.quotas[0] = Some(quota);
        if answer.is_ok() && how.ticket {
            verdict.ticket = Some((key, quota));
        }
        Decision::Ready(verdict)
    }

    fn refund(&self, (key, quota): (E::Key, Quota), cost: u32) {
        self.keyed
            .limiter()
            .key(&key)
            .with_quota(&quota)
            .refund_n(cost);
    }

    fn start_upkeep(&self) {
        Local::start_upkeep(&self.keyed)
    }
}
