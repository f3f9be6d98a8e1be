//! Redis policies (features `http` and `redis`): buckets shared by every server, decided by
//! one script per request; several policies with the all-or-nothing script, which reports
//! each policy's own figures. Text a client chose (an API key) enters a Redis key name through
//! [`key_part`]: bounded, and never a hash tag of its own.

use super::backend::{sealed, How, Outcome, Pending, Verdict};
use super::fault::Fault;
use super::headers::{checked_name, PolicyInfo};
use super::key::{KeyError, KeyExtractor, RequestHead};
use super::state::{PolicyState, MAX_POLICIES};
use cellrate::Quota;
use cellrate_redis::{key_part, Booking, RedisLimiter, Source};
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

/// Through [`key_part`]: as it is when short visible ASCII without `{`, `}`, `#` or `%`,
/// otherwise a SHA-256 digest.
impl RedisKey for String {
    fn write_key(&self, out: &mut String) {
        out.push_str(&key_part(self.as_bytes()));
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

/// Through [`key_part`], as a `String` is: a header value is the client's text.
impl RedisKey for HeaderValue {
    fn write_key(&self, out: &mut String) {
        out.push_str(&key_part(self.as_bytes()));
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
    /// [`FailurePolicy`](cellrate_redis::FailurePolicy) answers when Redis does not.
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
    /// ([`RedisLimiter::reserve_key_n_with_quota`]); a refund gives back under the quota the
    /// request was charged.
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

/// What an admitted request keeps to be refunded: each policy's booking (`None` for one
/// skipped), under the quota it was charged.
pub struct Bookings(Vec<Option<Booking>>);

impl sealed::Backend for RedisPolicies {
    type Ticket = Bookings;

    fn policies(&self) -> Vec<PolicyInfo> {
        let info = |p: &Def| PolicyInfo::new(&p.name, p.limiter.quota());
        self.policies.iter().map(info).collect()
    }

    fn decide(
        &self,
        head: &RequestHead<'_>,
        cost: u32,
        how: &How<'_>,
        verdict: &mut Verdict<Bookings>,
    ) -> Option<Pending<Bookings>> {
        let mut keys = Vec::with_capacity(self.policies.len());
        let mut quotas = [None; MAX_POLICIES];
        for (i, policy) in self.policies.iter().enumerate() {
            match (policy.key)(head) {
                Ok(key) => keys.push(Some(key)),
                // Skipped only when the layer says so and the key is really absent, never for
                // a hop a trusted proxy wrote that cannot be read.
                Err(e) => match how.missing().apply(&policy.name, e) {
                    Ok(()) => keys.push(None),
                    Err(e) => {
                        verdict.outcome = Outcome::NoKey(Box::new(e));
                        return None;
                    }
                },
            }
            quotas[i] = policy.quota_of.as_ref().map(|f| f(head));
        }
        let partitions: Vec<Option<u64>> = keys
            .iter()
            .map(|k| how.partition().zip(k.as_ref()).map(|(h, k)| h.hash_one(k)))
            .collect();
        let policies = Arc::clone(&self.policies);
        let ticket = how.ticket();
        Some(Box::pin(async move {
            let (mut verdict, bookings) = decide(&policies, &keys, &quotas, cost, ticket).await;
            for (state, partition) in verdict.states.iter_mut().zip(partitions) {
                if let Some(state) = state {
                    state.partition = partition;
                }
            }
            verdict.quotas = quotas;
            if ticket && matches!(verdict.outcome, Outcome::Allowed) {
                verdict.ticket = Some(Box::new(bookings));
            }
            verdict
        }))
    }

    fn refund(&self, bookings: Bookings, cost: u32) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("rate limit: no Tokio runtime to refund in Redis");
            return;
        };
        for booking in bookings.0.into_iter().flatten() {
            runtime.spawn(async move {
                let key = booking.key().to_owned();
                // `cost` of the booked tokens back: the request is settled at the rest.
                let kept = booking.cost().saturating_sub(cost);
                if let Err(e) = booking.settle(kept).await {
                    tracing::warn!("rate limit: Redis refund of {key} failed: {e}");
                }
            });
        }
    }
}

/// One script: a single check, or the all-or-nothing check of every keyed policy. Each policy
/// gets its own figures (a refusal names only the policies that refused), and, when a
/// `ticket` is wanted, the bookings of an admission.
async fn decide(
    policies: &[Def],
    keys: &[Option<String>],
    quotas: &[Option<Quota>; MAX_POLICIES],
    cost: u32,
    ticket: bool,
) -> (Verdict<Bookings>, Bookings) {
    let quota = |i: usize| quotas[i].unwrap_or_else(|| policies[i].limiter.quota());
    // The figures of an answer are under the quota Redis enforced (its interval rounded up to
    // whole µs): a `t` worked out under the quota as given could come after `Retry-After`.
    // One Redis cannot hold is refused before anything is figured.
    let in_force = |i: usize| RedisLimiter::quota_in_force(&quota(i)).unwrap_or(quota(i));
    let active: Vec<(usize, &str)> = keys
        .iter()
        .enumerate()
        .filter_map(|(i, k)| k.as_deref().map(|k| (i, k)))
        .collect();
    let mut verdict = Verdict::bare(Outcome::Allowed);
    let mut bookings: Vec<Option<Booking>> = keys.iter().map(|_| None).collect();
    let refused = match active.as_slice() {
        [] => None,
        [(i, key)] => {
            let limiter = &policies[*i].limiter;
            let (answer, source) = if ticket {
                let booked = limiter.reserve_key_n_answer(key, cost, &quota(*i)).await;
                let answer = booked.decision.map(|booking| {
                    let allowed = booking.allowed();
                    bookings[*i] = Some(booking);
                    allowed
                });
                (answer, booked.source)
            } else {
                let checked = limiter.check_key_n_answer(key, cost, &quota(*i)).await;
                (checked.decision, checked.source)
            };
            if let Some(fault) = fault_of(&source) {
                return (Verdict::bare(fault), Bookings(bookings));
            }
            // A bucket's figures only where a bucket answered: the failure policy's admission
            // or refusal says nothing of one.
            if source.from_bucket() {
                verdict.states[*i] = Some(PolicyState::of_answer(&in_force(*i), &answer));
            }
            answer.err()
        }
        [(first, _), ..] => {
            let limits: Vec<(&str, Quota)> = active.iter().map(|&(i, k)| (k, quota(i))).collect();
            let answer = policies[*first]
                .limiter
                .reserve_all_of_n(&limits, cost)
                .await;
            let source = match &answer {
                Ok(joint) => joint.source(),
                Err(denial) => denial.source(),
            };
            if let Some(fault) = fault_of(source) {
                return (Verdict::bare(fault), Bookings(bookings));
            }
            // Each key's own figures, from Redis or from the local fallback; a fail-open or
            // fail-closed answer tells nothing of a bucket, and shows no figures.
            let figures = source.from_bucket();
            match answer {
                Ok(joint) => {
                    for (&(i, _), booking) in active.iter().zip(joint.into_each()) {
                        let own = Ok(booking.allowed());
                        if figures {
                            verdict.states[i] = Some(PolicyState::of_answer(&in_force(i), &own));
                        }
                        bookings[i] = Some(booking);
                    }
                    None
                }
                Err(denial) => {
                    for (&(i, _), own) in active.iter().zip(denial.each()) {
                        if figures {
                            verdict.states[i] = Some(PolicyState::of_answer(&in_force(i), own));
                        }
                    }
                    Some(denial.denied())
                }
            }
        }
    };
    if let Some(denied) = refused {
        verdict.outcome = Outcome::Denied(denied.retry_after());
    }
    (verdict, Bookings(bookings))
}

/// The outcome of an answer Redis refused for a fault of the deployment (a usage error: a
/// user without a command the scripts need, keys of two Cluster slots, a key holding other
/// data), which is no refusal of the request.
fn fault_of(source: &Source) -> Option<Outcome> {
    let Source::Fault(e) = source else {
        return None;
    };
    let fault = Fault {
        what: format!("the Redis store refused the limiter: {e}"),
        fix: e.remedy().unwrap_or("see the error"),
    };
    Some(Outcome::Fault(Box::new(fault)))
}

/// One Redis policy alone: a set of one.
impl sealed::Backend for RedisPolicy {
    type Ticket = Bookings;

    fn policies(&self) -> Vec<PolicyInfo> {
        self.set.policies()
    }

    fn decide(
        &self,
        head: &RequestHead<'_>,
        cost: u32,
        how: &How<'_>,
        verdict: &mut Verdict<Bookings>,
    ) -> Option<Pending<Bookings>> {
        self.set.decide(head, cost, how, verdict)
    }

    fn refund(&self, bookings: Bookings, cost: u32) {
        self.set.refund(bookings, cost)
    }
}
