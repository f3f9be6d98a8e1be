//! Buckets in this process: one bounded keyed table per rule, and the all-or-nothing spend
//! across the tables of one request.
//!
//! A request's descriptors each have their own cost and need their own status: the core's
//! `all_of` with a cost per limit, answered limit by limit (`check_each`), spends in all or
//! none, rolling back exactly when nothing else touched a bucket meanwhile (docs/design.md,
//! section 5). A request of one bucket is a plain check.

use super::Spend;
use crate::settings::Overflow;
use cellrate::{all_of, Allowed, Clock, Denied, KeyedLimiter, Limit, OverflowPolicy, Quota};
use std::sync::Arc;
use std::time::Duration;

/// The clock every table of a server reads (one clock, so that one request's buckets are
/// decided on one time line).
pub type SharedClock = Arc<dyn Clock + Send + Sync>;

/// A rule's buckets: one per distinct descriptor, in a fixed table.
pub(crate) type Table = KeyedLimiter<String, SharedClock>;

/// A table for `quota`, of `max_keys` keys, with the overflow policy.
pub(crate) fn table(
    quota: Quota,
    max_keys: usize,
    overflow: Overflow,
    clock: SharedClock,
) -> Table {
    let policy = match overflow {
        Overflow::Deny => OverflowPolicy::DenyNewKeys,
        Overflow::Evict => OverflowPolicy::EvictNearestNew,
    };
    KeyedLimiter::builder(quota)
        .max_keys(max_keys)
        .overflow(policy)
        .clock(clock)
        .build()
}

/// Spends every `spends[i].cost` in its bucket, or nothing: `answers[i]` is each bucket's own
/// answer. Admitted: what each bucket has left. Refused: the refusing bucket's refusal, and
/// for the others what they would answer alone now (each judged on its own, nothing spent).
pub(crate) fn all_or_nothing(
    spends: &[Spend<'_>],
    answers: &mut Vec<Result<Allowed, Denied>>,
) -> bool {
    answers.clear();
    if let [one] = spends {
        let answer = local(one).key(one.key).check_n(one.cost);
        let ok = answer.is_ok();
        answers.push(answer);
        return ok;
    }
    let buckets: Vec<_> = spends.iter().map(|s| local(s).key(s.key)).collect();
    let limits: Vec<(&dyn Limit, u32)> = buckets
        .iter()
        .zip(spends)
        .map(|(bucket, spend)| (bucket as &dyn Limit, spend.cost))
        .collect();
    match all_of(&limits).check_each() {
        Ok(each) => {
            answers.extend(each.into_iter().map(Ok));
            true
        }
        Err(each) => {
            answers.extend(each);
            false
        }
    }
}

/// The table of a bucket of the local store (the only kind it makes).
fn local<'a>(spend: &Spend<'a>) -> &'a Table {
    spend
        .buckets
        .table()
        .expect("the local store makes local buckets only")
}

/// What `spend` would answer alone now, spending nothing: a peek's level, judged against the
/// cost with the arithmetic of a check (docs/design.md, section 1).
pub(crate) fn alone(spend: &Spend<'_>) -> Result<Allowed, Denied> {
    let quota = spend.buckets.quota;
    let level = local(spend).key(spend.key).check_n(0)?;
    judge(&quota, level.reset_after(), spend.cost)
}

/// The answer of a bucket under `quota`, `reset_after` from full, to a request of `cost`.
pub(crate) fn judge(quota: &Quota, reset_after: Duration, cost: u32) -> Result<Allowed, Denied> {
    let interval = quota.emission_interval().as_nanos();
    let depth = quota.replenish_all().as_nanos();
    let ahead = reset_after.as_nanos();
    let need = ahead + u128::from(cost) * interval;
    let ns = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
    if need <= depth {
        return Ok(Allowed::from_figures(ns(ahead), ns(depth), ns(interval)));
    }
    let retry = (cost <= quota.burst()).then(|| ns(need - depth));
    Err(Denied::from_figures(
        ns(ahead),
        ns(depth),
        ns(interval),
        retry,
    ))
}
