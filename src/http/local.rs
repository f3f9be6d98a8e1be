//! Deciding with in-process limiters: at once, in `call`, with no allocation.

use super::backend::{sealed, How, Outcome, Pending, Verdict};
use super::headers::PolicyInfo;
use super::key::{KeyExtractor, RequestHead};
use super::policy::{sealed::Local, Slots, Tiered};
use super::state::{PolicyState, MAX_POLICIES};
use crate::clock::{lagged, lagged_within, now_for, tolerance_for};
use crate::{all_of, Allowed, Clock, Denied, Limit, Nanos, Quota};
use std::hash::BuildHasher;

impl<P: Local> sealed::Backend for P {
    type Ticket = P::Keys;

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
        verdict: &mut Verdict<P::Keys>,
    ) -> Option<Pending<P::Keys>> {
        self.decide_into(head, cost, how, verdict);
        None
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

/// Records the `answer` of a policy decided alone (index 0) under `quota` (the live one, and
/// the one `RateLimit-Policy` states): its figures when a header will show them (a refusal
/// always does), the ticket of an admission when asked for.
#[inline(always)]
pub(crate) fn alone<T>(
    verdict: &mut Verdict<T>,
    answer: Result<Allowed, Denied>,
    (quota, described): (&Quota, &Quota),
    partition: Option<u64>,
    how: &How<'_>,
    keys: T,
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
                verdict.ticket = Some(keys);
            }
        }
        Err(denied) => verdict.outcome = Outcome::Refused(denied.retry_after()),
    }
}

/// Decides the policies of a set together, all or nothing, at one reading of their shared
/// clock.
pub(crate) fn together<P: Local>(
    set: &P,
    keys: P::Keys,
    cost: u32,
    how: &How<'_>,
    verdict: &mut Verdict<P::Keys>,
) {
    let mut slots = Slots::new(how.partition);
    set.fill(&keys, 0, &mut slots);
    // One reading for the decision and the figures, as stale as the shallowest quota allows:
    // what each policy's own `check_n` reads.
    let tolerance = slots.iter().map(|s| tolerance_for(s.quota)).min();
    let tolerance = tolerance.unwrap_or(Nanos::ZERO);
    let now = set.clock().now_within(tolerance);
    let mut limits: [Option<&dyn Limit>; MAX_POLICIES] = [None; MAX_POLICIES];
    for (i, slot) in slots.iter().enumerate() {
        limits[i] = Some(slot.limit());
    }
    let limits: [&dyn Limit; MAX_POLICIES] = match limits {
        [Some(a), b, c, d] => [a, b.unwrap_or(a), c.unwrap_or(a), d.unwrap_or(a)],
        [None, ..] => return, // every policy skipped: admitted, nothing to show
    };
    let answer = all_of(&limits[..slots.len])
        .check_n_at(cost, now)
        .map_err(|denied| lagged_within(set.clock(), tolerance, denied));
    // Each policy's own level, by a peek (cost 0 spends and creates nothing), only when a
    // header will show it.
    if how.figures || answer.is_err() {
        for slot in slots.iter() {
            verdict.states[slot.index] = Some(slot.state(&slot.check_n_at(0, now)));
            if slot.quota != slot.described {
                verdict.quotas[slot.index] = Some(*slot.quota);
            }
        }
    }
    match answer {
        Ok(_) => {
            if how.ticket {
                verdict.ticket = Some(keys);
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
    // The key and the quota it was charged under: the refund goes through the same quota.
    type Ticket = (E::Key, Quota);

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
        let key = match self.keyed.keys(head, how.skip_missing) {
            Ok(Some(key)) => key,
            Ok(None) => return None,
            Err(e) => {
                verdict.outcome = Outcome::NoKey(e);
                return None;
            }
        };
        let quota = (self.quota_of)(head, &key);
        let limiter = self.keyed.limiter();
        let now = now_for(limiter.clock(), &quota);
        let answer = limiter
            .check_key_n_with_quota_at(&key, cost, &quota, now)
            .map_err(|denied| lagged(limiter.clock(), &quota, denied));
        verdict.quotas[0] = Some(quota);
        let partition = how.partition.map(|h| h.hash_one((0usize, &key)));
        alone(
            verdict,
            answer,
            (&quota, &quota),
            partition,
            how,
            (key, quota),
        );
        None
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
