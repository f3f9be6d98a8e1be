//! Redis policies (features `http` and `redis`): buckets shared by every server, decided by
//! one script per request; several policies with the all-or-nothing script.

use super::backend::{sealed, How, Outcome, Pending, Verdict};
use super::headers::{checked_name, PolicyInfo};
use super::key::{KeyError, KeyExtractor, RequestHead};
use super::state::{PolicyState, MAX_POLICIES};
use crate::redis::RedisLimiter;
use crate::Quota;
use http::HeaderValue;
use std::fmt::Write;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::Arc;

/// A key written into a Redis key name.
pub trait RedisKey {
    /// Appends the key's text to `out`.
    fn write_key(&self, out: &mut String);
}

impl RedisKey for IpAddr {
    fn write_key(&self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
}

impl RedisKey for String {
    fn write_key(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl RedisKey for u64 {
    fn write_key(&self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
}

impl RedisKey for () {
    fn write_key(&self, _: &mut String) {}
}

/// Visible ASCII as it is, `%` and every other byte as `%XX`: distinct values stay distinct.
impl RedisKey for HeaderValue {
    fn write_key(&self, out: &mut String) {
        for &b in self.as_bytes() {
            if b.is_ascii_graphic() && b != b'%' {
                out.push(b as char);
            } else {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
}

type KeyFn = dyn Fn(&RequestHead<'_>) -> Result<String, KeyError> + Send + Sync;
type QuotaFn = dyn Fn(&RequestHead<'_>) -> Quota + Send + Sync;

/// A policy whose buckets live in Redis: the key of a request is `<name>:<key>` under the
/// limiter's prefix, the quota the limiter's (or one chosen per request).
pub struct RedisPolicy {
    set: RedisPolicies,
}

/// One policy's parts.
struct Def {
    name: String,
    limiter: RedisLimiter,
    key: Box<KeyFn>,
    quota_of: Option<Box<QuotaFn>>,
}

impl RedisPolicy {
    /// The policy `name`, enforced by `limiter` on the keys `extractor` finds. The limiter's
    /// [`FailurePolicy`](crate::redis::FailurePolicy) answers when Redis does not.
    ///
    /// # Panics
    /// If `name` is empty or not printable ASCII.
    pub fn new<E>(name: impl Into<String>, limiter: RedisLimiter, extractor: E) -> RedisPolicy
    where
        E: KeyExtractor,
        E::Key: RedisKey,
    {
        let name = checked_name(name, "RedisPolicy::new");
        let prefix = format!("{name}:");
        let def = Def {
            name,
            limiter,
            key: Box::new(move |head| {
                let key = extractor.extract(head)?;
                let mut text = String::with_capacity(prefix.len() + 40);
                text.push_str(&prefix);
                key.write_key(&mut text);
                Ok(text)
            }),
            quota_of: None,
        };
        RedisPolicy {
            set: RedisPolicies {
                policies: Arc::new(vec![def]),
            },
        }
    }

    /// A quota chosen per request (tiers), for this call only
    /// ([`RedisLimiter::check_key_n_with_quota`]). Refunds are then unavailable: they use the
    /// limiter's quota.
    pub fn quota_per_request(
        mut self,
        quota_of: impl Fn(&RequestHead<'_>) -> Quota + Send + Sync + 'static,
    ) -> RedisPolicy {
        let only = Arc::get_mut(&mut self.set.policies).expect("not shared before build");
        only[0].quota_of = Some(Box::new(quota_of));
        self
    }

    /// `self` and `other`, all or nothing in one script
    /// ([`RedisLimiter::check_all_of_n`]; on a Cluster, every key of a request must be in one
    /// slot).
    ///
    /// # Panics
    /// If the limiters' key prefixes differ (the script and the refunds must name the same
    /// keys).
    pub fn and(self, other: RedisPolicy) -> RedisPolicies {
        self.set.and(other)
    }
}

/// Several [`RedisPolicy`]s decided together.
pub struct RedisPolicies {
    policies: Arc<Vec<Def>>,
}

impl RedisPolicies {
    /// One more policy; see [`RedisPolicy::and`].
    pub fn and(self, other: RedisPolicy) -> RedisPolicies {
        let mut policies = Arc::into_inner(self.policies).expect("not shared before build");
        assert!(
            policies.len() < MAX_POLICIES,
            "a layer enforces at most {MAX_POLICIES} policies"
        );
        let mut other = Arc::into_inner(other.set.policies).expect("not shared before build");
        let other = other.pop().expect("a policy");
        let prefix = &other.limiter.options().key_prefix;
        assert!(
            policies
                .iter()
                .all(|p| &p.limiter.options().key_prefix == prefix),
            "RedisPolicy::and: the limiters' key prefixes differ"
        );
        policies.push(other);
        RedisPolicies {
            policies: Arc::new(policies),
        }
    }
}

/// Each policy's Redis key for this request; `None` for one skipped.
type Keys = Vec<Option<String>>;

impl sealed::Backend for RedisPolicies {
    type Ticket = Keys;

    fn policies(&self) -> Vec<PolicyInfo> {
        let info = |p: &Def| PolicyInfo::new(&p.name, p.limiter.quota());
        self.policies.iter().map(info).collect()
    }

    fn decide(
        &self,
        head: &RequestHead<'_>,
        cost: u32,
        how: &How<'_>,
        verdict: &mut Verdict<Keys>,
    ) -> Option<Pending<Keys>> {
        let mut keys = Vec::with_capacity(self.policies.len());
        let mut quotas = [None; MAX_POLICIES];
        for (i, policy) in self.policies.iter().enumerate() {
            match (policy.key)(head) {
                Ok(key) => keys.push(Some(key)),
                Err(e) if how.skip_missing => {
                    tracing::debug!(policy = %policy.name, "rate limit skipped: {e}");
                    keys.push(None);
                }
                Err(e) => {
                    verdict.outcome = Outcome::NoKey(e);
                    return None;
                }
            }
            quotas[i] = policy.quota_of.as_ref().map(|f| f(head));
        }
        let partitions: Vec<Option<u64>> = keys
            .iter()
            .map(|k| how.partition.zip(k.as_ref()).map(|(h, k)| h.hash_one(k)))
            .collect();
        let policies = Arc::clone(&self.policies);
        let ticket = how.ticket;
        Some(Box::pin(async move {
            let mut verdict = decide(&policies, &keys, &quotas, cost).await;
            for (state, partition) in verdict.states.iter_mut().zip(partitions) {
                if let Some(state) = state {
                    state.partition = partition;
                }
            }
            verdict.quotas = quotas;
            if ticket && matches!(verdict.outcome, Outcome::Allowed) {
                verdict.ticket = Some(keys);
            }
            verdict
        }))
    }

    fn refund(&self, keys: Keys, cost: u32) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("rate limit: no Tokio runtime to refund in Redis");
            return;
        };
        for (policy, key) in self.policies.iter().zip(keys) {
            let Some(key) = key else { continue };
            let limiter = policy.limiter.clone();
            runtime.spawn(async move {
                if let Err(e) = limiter.try_refund_key_n(&key, cost).await {
                    tracing::warn!("rate limit: Redis refund of {key} failed: {e}");
                }
            });
        }
    }

    fn refund_unsupported(&self) -> Option<&'static str> {
        self.policies
            .iter()
            .any(|p| p.quota_of.is_some())
            .then_some("a Redis refund uses the limiter's quota, not the one chosen per request")
    }
}

/// One script: a single check, or the all-or-nothing check of every keyed policy.
async fn decide(
    policies: &[Def],
    keys: &[Option<String>],
    quotas: &[Option<Quota>; MAX_POLICIES],
    cost: u32,
) -> Verdict<Keys> {
    let quota = |i: usize| quotas[i].unwrap_or_else(|| policies[i].limiter.quota());
    let active: Vec<(usize, &str)> = keys
        .iter()
        .enumerate()
        .filter_map(|(i, k)| k.as_deref().map(|k| (i, k)))
        .collect();
    let mut verdict = Verdict::bare(Outcome::Allowed);
    let answer = match active.as_slice() {
        [] => return verdict,
        [(i, key)] => {
            let answer = policies[*i]
                .limiter
                .check_key_n_with_quota(key, cost, &quota(*i))
                .await;
            verdict.states[*i] = Some(PolicyState::of_answer(&quota(*i), &answer));
            answer
        }
        [(first, _), ..] => {
            let limits: Vec<(&str, Quota)> = active.iter().map(|&(i, k)| (k, quota(i))).collect();
            let answer = policies[*first].limiter.check_all_of_n(&limits, cost).await;
            for &(i, _) in &active {
                verdict.states[i] = Some(PolicyState::combined(&answer));
            }
            answer
        }
    };
    if let Err(denied) = answer {
        verdict.outcome = Outcome::Refused(denied.retry_after());
    }
    verdict
}

/// One Redis policy alone: a set of one.
impl sealed::Backend for RedisPolicy {
    type Ticket = Keys;

    fn policies(&self) -> Vec<PolicyInfo> {
        self.set.policies()
    }

    fn decide(
        &self,
        head: &RequestHead<'_>,
        cost: u32,
        how: &How<'_>,
        verdict: &mut Verdict<Keys>,
    ) -> Option<Pending<Keys>> {
        self.set.decide(head, cost, how, verdict)
    }

    fn refund(&self, keys: Keys, cost: u32) {
        self.set.refund(keys, cost)
    }

    fn refund_unsupported(&self) -> Option<&'static str> {
        self.set.refund_unsupported()
    }
}
