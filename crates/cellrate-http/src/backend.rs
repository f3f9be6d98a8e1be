//! What the layer asks of the limiters behind it: a decision for a request, and a refund.

#[cfg(feature = "redis")]
use super::fault::Fault;
use super::headers::PolicyInfo;
use super::key::{KeyError, MissingKey, RequestHead};
use super::shared::Options;
use super::state::{PolicyState, MAX_POLICIES};
use cellrate::Quota;
use core::future::Future;
use core::pin::Pin;
use core::time::Duration;
use std::hash::RandomState;

/// The limiters a [`RateLimitLayer`](super::RateLimitLayer) decides with: in-process policies
/// ([`Global`](super::Global), [`Keyed`](super::Keyed), several joined with `.and(..)`, or one
/// [`Tiered`](super::Tiered)) or, with the `redis` feature, Redis policies. Sealed.
pub trait Backend: sealed::Backend {}

impl<T: sealed::Backend> Backend for T {}

pub(crate) mod sealed {
    use super::*;

    /// The part of [`Backend`](super::Backend) users do not see.
    pub trait Backend: Send + Sync + 'static {
        /// What a decision keeps to refund the request after its response.
        type Ticket: Send + 'static;

        /// The policies, in header order.
        fn policies(&self) -> Vec<PolicyInfo>;

        /// Decides on `cost` tokens for a request: in `verdict` (which starts as an admission
        /// with no figures), or later, by the future returned (a round trip to Redis). Written
        /// in place: returned by value, the verdict is copied out through memory on every
        /// request (the `http` rows of BENCHMARKS.md).
        fn decide(
            &self,
            head: &RequestHead<'_>,
            cost: u32,
            how: &How<'_>,
            verdict: &mut Verdict<Self::Ticket>,
        ) -> Option<Pending<Self::Ticket>>;

        /// [`decide`](Self::decide) for a layer that records nothing of an admission (no
        /// headers on admitted responses, no refunds), where most requests need only the
        /// answer: `None` when the request is admitted, its tokens spent; otherwise the
        /// decision. In-process policies check first and make a verdict only for a request
        /// they do not admit, so that an admission is a few cache lines of code.
        #[inline]
        fn decide_plain(
            &self,
            head: &RequestHead<'_>,
            cost: u32,
            how: &How<'_>,
        ) -> Option<Decision<Self::Ticket>> {
            let mut verdict = Verdict::bare(Outcome::Allowed);
            match self.decide(head, cost, how, &mut verdict) {
                Some(pending) => Some(Decision::Pending(pending)),
                None if matches!(verdict.outcome, Outcome::Allowed) => None,
                None => Some(Decision::Made(verdict)),
            }
        }

        /// Gives back `cost` tokens of an admitted request.
        fn refund(&self, ticket: Self::Ticket, cost: u32);

        /// Why a refund would be wrong with this backend, if it would.
        fn refund_unsupported(&self) -> Option<&'static str> {
            None
        }

        /// Starts the background eviction of idle keys, if any.
        fn start_upkeep(&self) {}
    }
}

/// How to decide: the layer's options that reach the backend, read where a decision needs
/// them (an admission that records nothing reads none).
#[derive(Clone, Copy)]
pub struct How<'a> {
    options: &'a Options,
    hasher: &'a RandomState,
}

impl<'a> How<'a> {
    /// The options of a layer, and its keyed hasher for `pk`.
    pub(crate) fn new(options: &'a Options, hasher: &'a RandomState) -> How<'a> {
        How { options, hasher }
    }

    /// The layer's choice for a request without a key, for the policies without their own.
    #[inline]
    pub(crate) fn missing(&self) -> MissingKey {
        self.options.missing_key
    }

    /// A keyed hasher for `pk`, when asked for.
    #[inline]
    pub(crate) fn partition(&self) -> Option<&'a RandomState> {
        self.options.partition_key.then_some(self.hasher)
    }

    /// Keep a ticket for a refund.
    #[inline]
    pub(crate) fn ticket(&self) -> bool {
        self.options.refunds()
    }

    /// An admitted request's headers need the policies' levels (a refusal always does).
    #[inline]
    pub(crate) fn figures(&self) -> bool {
        self.options.on_allowed.ietf || self.options.on_allowed.legacy
    }
}

/// A decision still to come (Redis): its verdict, once made.
pub type Pending<T> = Pin<Box<dyn Future<Output = Verdict<T>> + Send>>;

/// A decision [`decide_plain`](sealed::Backend::decide_plain) did not settle with an
/// admission: made, or to come.
// The verdict by value, not boxed: a box would be an allocation per refusal, and the
// decision is written in place where the service's call keeps it.
#[allow(clippy::large_enum_variant)]
pub enum Decision<T> {
    /// Made now.
    Made(Verdict<T>),
    /// To come (Redis).
    Pending(Pending<T>),
}

/// What was decided.
#[derive(Debug)]
pub enum Outcome {
    /// Admitted: its tokens are spent.
    Allowed,
    /// Denied: nothing spent. `None`: the cost exceeds a burst, it can never pass.
    Denied(Option<Duration>),
    /// A policy found no key (and is not configured to skip it). Boxed: every verdict is
    /// dropped, and an outcome that owns nothing but a pointer is dropped in a compare.
    NoKey(Box<KeyError>),
    /// No decision, for a fault of the deployment (a Redis store that refuses the limiter):
    /// answered 500, not as a refusal. Boxed, as `NoKey`.
    #[cfg(feature = "redis")]
    Fault(Box<Fault>),
}

/// A decision with the figures for the headers.
pub struct Verdict<T> {
    pub(crate) outcome: Outcome,
    /// Per policy, in the order of [`sealed::Backend::policies`]; `None` for one that did not
    /// apply.
    pub(crate) states: [Option<PolicyState>; MAX_POLICIES],
    /// Per policy, the quota of this request when it is not the configured one.
    pub(crate) quotas: [Option<Quota>; MAX_POLICIES],
    /// Present when asked for and the request was admitted. Boxed: a ticket holds a booking
    /// per policy (hundreds of bytes), and a verdict is moved on its way to the layer.
    pub(crate) ticket: Option<Box<T>>,
    /// With [`Outcome::NoKey`]: the choice of the policy that found no key, if it made one.
    pub(crate) missing: Option<MissingKey>,
}

impl<T> Verdict<T> {
    /// A verdict with no figures.
    pub(crate) fn bare(outcome: Outcome) -> Verdict<T> {
        Verdict {
            outcome,
            states: [None; MAX_POLICIES],
            quotas: [None; MAX_POLICIES],
            ticket: None,
            missing: None,
        }
    }

    /// Names of the policies that refused a request of `cost`: those with fewer tokens left.
    pub(crate) fn violated<'p>(
        &self,
        policies: &'p [PolicyInfo],
        cost: u32,
    ) -> impl Iterator<Item = &'p str> + use<'p, '_, T> {
        policies
            .iter()
            .zip(&self.states)
            .filter(move |(_, s)| s.is_some_and(|s| s.remaining < cost))
            .map(|(p, _)| p.name.as_str())
    }
}

/// Why a request has no key, and the choice of the policy that found none (if it made one).
pub struct NoKey(pub(crate) KeyError, pub(crate) Option<MissingKey>);

impl NoKey {
    /// The request is answered for want of a key.
    pub(crate) fn record<T>(self, verdict: &mut Verdict<T>) {
        verdict.outcome = Outcome::NoKey(Box::new(self.0));
        verdict.missing = self.1;
    }
}
