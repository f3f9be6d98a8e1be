//! One request's decision: each descriptor to its rule and bucket, every enforced bucket spent
//! or none, shadow rules decided beside them, one status per descriptor.
//!
//! - A descriptor that matches no rule (or an unknown domain) is OK with no `current_limit`,
//!   as the reference server answers; an `unlimited` rule is OK with `limit_remaining` at
//!   `u32::MAX`; a rule of `requests_per_unit: 0` always refuses.
//! - A rule named in the `replaces` of another rule matched by the same request is not
//!   applied to it.
//! - A per-call `limit` override is a bucket of its own: its quota is part of its identity
//!   (docs/design.md, *The rate limit server*).
//! - The enforced buckets are spent all or nothing ([`Store::decide`]). Shadow buckets are then
//!   decided as an enforced one would be (spent if the request was admitted and they admit),
//!   and report OVER_LIMIT without changing the overall code.

use crate::active::{Active, OverrideError};
use crate::config::{Limit, Reported, Unit};
use crate::counts::{Outcome, RuleStats};
use crate::keys::{bucket_key, full_key, metric_value};
use crate::storage::{Buckets, Spend, Store};
use cellrate::{Allowed, Denied};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// A descriptor as the decision reads it (checked by `rls/request.rs`).
pub(crate) struct Descriptor<'a> {
    pub entries: &'a [(String, String)],
    /// The per-call `limit` override.
    pub limit: Option<(u32, Unit)>,
    pub cost: u32,
}

/// A descriptor's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Status {
    pub over_limit: bool,
    /// `current_limit`, with the rule's name (empty if it has none).
    pub limit: Option<(Reported, String)>,
    pub remaining: u32,
    pub until_reset: Option<Duration>,
}

impl Status {
    const NO_LIMIT: Status = Status {
        over_limit: false,
        limit: None,
        remaining: 0,
        until_reset: None,
    };
}

/// What a descriptor is decided by.
enum Target<'a> {
    NoLimit,
    Unlimited,
    Blocked {
        reported: Reported,
        name: String,
        shadow: bool,
        stats: &'a RuleStats,
    },
    Bucket {
        buckets: Arc<Buckets>,
        key: String,
        reported: Reported,
        name: String,
        shadow: bool,
        stats: &'a RuleStats,
    },
}

/// Why a request cannot be decided (answered INVALID_ARGUMENT).
#[derive(Debug)]
pub(crate) struct Refusal(pub String);

/// Decides `descriptors` of `domain`: whether the request is admitted, and each status.
pub(crate) async fn decide(
    active: &Active,
    store: &Store,
    domain: &str,
    descriptors: &[Descriptor<'_>],
) -> Result<(bool, Vec<Status>), Refusal> {
    let Some(level) = active.config.domains.get(domain) else {
        return Ok((true, vec![Status::NO_LIMIT; descriptors.len()]));
    };
    let overrides = active.overrides.get(domain);
    let mut matched = Vec::new();
    // The names of rules that a rule matched by this request replaces (no allocation while
    // none does).
    let mut replaced: HashSet<&str> = HashSet::new();
    let mut targets = Vec::with_capacity(descriptors.len());
    for d in descriptors {
        let target = if let (Some((n, unit)), Some(overrides)) = (d.limit, overrides) {
            let stats = &*overrides.stats;
            let reported = Reported {
                requests_per_unit: n,
                unit,
            };
            if n == 0 {
                Target::Blocked {
                    reported,
                    name: String::new(),
                    shadow: false,
                    stats,
                }
            } else {
                let buckets = overrides.buckets(store, n, unit).map_err(|e| match e {
                    OverrideError::TooMany(max) => Refusal(format!(
                        "the domain holds {max} distinct limit overrides already"
                    )),
                    OverrideError::Quota(e) => Refusal(format!("limit override: {e}")),
                })?;
                Target::Bucket {
                    buckets,
                    key: full_key(d.entries),
                    reported,
                    name: String::new(),
                    shadow: false,
                    stats,
                }
            }
        } else {
            let entries = d.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()));
            match level.find(entries, &mut matched) {
                None => Target::NoLimit,
                Some(index) => {
                    let rule = &active.config.rules[index];
                    let state = &active.rules[index];
                    if d.limit.is_none() {
                        replaced.extend(rule.replaces.iter().map(String::as_str));
                    }
                    let name = rule.name.clone().unwrap_or_default();
                    match (&rule.limit, &state.buckets) {
                        (Limit::Unlimited, _) => Target::Unlimited,
                        (Limit::Blocked { reported }, _) => Target::Blocked {
                            reported: reported.clone(),
                            name,
                            shadow: rule.shadow,
                            stats: &state.stats,
                        },
                        (Limit::Bucket { reported, .. }, Some(buckets)) => Target::Bucket {
                            buckets: buckets.clone(),
                            key: bucket_key(d.entries, &matched),
                            reported: reported.clone(),
                            name,
                            shadow: rule.shadow,
                            stats: &state.stats,
                        },
                        (Limit::Bucket { .. }, None) => Target::NoLimit,
                    }
                }
            }
        };
        targets.push(target);
    }
    drop_replaced(&mut targets, &replaced);
    Ok(settle(store, descriptors, &targets).await)
}

/// Sets aside the rules that another rule of the request replaces.
fn drop_replaced(targets: &mut [Target<'_>], replaced: &HashSet<&str>) {
    if replaced.is_empty() {
        return;
    }
    for target in targets.iter_mut() {
        let name = match target {
            Target::Blocked { name, .. } | Target::Bucket { name, .. } => name.as_str(),
            _ => continue,
        };
        if replaced.contains(name) {
            *target = Target::NoLimit;
        }
    }
}

/// Spends and answers.
async fn settle(
    store: &Store,
    descriptors: &[Descriptor<'_>],
    targets: &[Target<'_>],
) -> (bool, Vec<Status>) {
    let blocked = targets
        .iter()
        .any(|t| matches!(t, Target::Blocked { shadow: false, .. }));
    let mut enforced = Vec::new();
    let mut shadow = Vec::new();
    for (i, target) in targets.iter().enumerate() {
        if let Target::Bucket {
            buckets,
            key,
            shadow: is_shadow,
            ..
        } = target
        {
            let spend = Spend {
                buckets,
                key,
                cost: descriptors[i].cost,
            };
            if *is_shadow {
                shadow.push((i, spend));
            } else {
                enforced.push((i, spend));
            }
        }
    }
    let spends: Vec<Spend<'_>> = enforced.iter().map(|(_, s)| s.clone()).collect();
    let mut answers = Vec::with_capacity(spends.len());
    let admitted = if blocked {
        store.peek(&spends, &mut answers).await;
        false
    } else {
        store.decide(&spends, &mut answers).await
    };
    let mut results: Vec<Option<Result<Allowed, Denied>>> = vec![None; targets.len()];
    for ((i, _), answer) in enforced.iter().zip(answers.iter()) {
        results[*i] = Some(*answer);
    }
    let mut one = Vec::with_capacity(1);
    for (i, spend) in shadow {
        let spends = [spend];
        if admitted {
            store.decide(&spends, &mut one).await;
        } else {
            store.peek(&spends, &mut one).await;
        }
        results[i] = one.pop();
    }
    let statuses = targets
        .iter()
        .zip(results)
        .zip(descriptors)
        .map(|((target, result), d)| status(target, result, d))
        .collect();
    (admitted, statuses)
}

/// The status of one descriptor, counted.
fn status(
    target: &Target<'_>,
    result: Option<Result<Allowed, Denied>>,
    d: &Descriptor<'_>,
) -> Status {
    match target {
        Target::NoLimit => Status::NO_LIMIT,
        Target::Unlimited => Status {
            remaining: u32::MAX,
            ..Status::NO_LIMIT
        },
        Target::Blocked {
            reported,
            name,
            shadow,
            stats,
        } => {
            stats.count(
                outcome(true, *shadow),
                stats.detailed().then(|| metric_value(d.entries)).as_deref(),
            );
            Status {
                over_limit: true,
                limit: Some((reported.clone(), name.clone())),
                remaining: 0,
                until_reset: Some(reported.unit.duration()),
            }
        }
        Target::Bucket {
            reported,
            name,
            shadow,
            stats,
            ..
        } => {
            let result = result.unwrap_or_else(|| Ok(Allowed::unlimited()));
            stats.count(
                outcome(result.is_err(), *shadow),
                stats.detailed().then(|| metric_value(d.entries)).as_deref(),
            );
            let (over_limit, remaining, until_reset) = match result {
                Ok(allowed) => (false, allowed.remaining(), allowed.reset_after()),
                Err(denied) => (
                    true,
                    denied.remaining(),
                    denied
                        .retry_after()
                        .map_or(denied.reset_after(), whole_seconds_up),
                ),
            };
            Status {
                over_limit,
                limit: Some((reported.clone(), name.clone())),
                remaining,
                until_reset: Some(until_reset),
            }
        }
    }
}

fn outcome(over: bool, shadow: bool) -> Outcome {
    match (over, shadow) {
        (false, _) => Outcome::Ok,
        (true, false) => Outcome::OverLimit,
        (true, true) => Outcome::ShadowOverLimit,
    }
}

/// A retry time rounded up to the whole second: Envoy's `X-RateLimit-Reset` reads whole
/// seconds from `duration_until_reset`, and a retry told too early is refused again.
pub(crate) fn whole_seconds_up(d: Duration) -> Duration {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    Duration::from_secs(secs)
}
