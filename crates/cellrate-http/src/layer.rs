//! `RateLimitLayer` and its builder: the options, and the state every clone shares.

use super::backend::Backend;
use super::body::{SameBody, WrappedBody};
use super::denial::Denial;
use super::fault::FaultLog;
use super::headers::{policy_field, FieldChoice};
use super::interned::static_value;
use super::key::{MissingKey, RequestHead};
use super::service::RateLimit;
use super::shared::{Options, Shared};
use super::state::MAX_POLICIES;
use super::stats::{Counters, LayerStats};
use bytes::Bytes;
use core::marker::PhantomData;
use http::{response, Response};
use std::fmt;
use std::hash::RandomState;
use std::sync::Arc;
use tower_layer::Layer;

/// A tower [`Layer`] that rate limits requests with the policies of a [`Backend`].
///
/// Clones share one state (the limiters, the options and the [`LayerStats`]): cloning the
/// layer or its services, as axum does per route and per connection, never multiplies a limit.
///
/// `K` is how responses carry their bodies: [`SameBody`], the inner service's own type (any
/// body built from `Bytes`, such as axum's), unless the layer was built with
/// [`RateLimitBuilder::wrap_body`] (tonic's body, and others).
pub struct RateLimitLayer<B, K = SameBody> {
    pub(crate) shared: Arc<Shared<B>>,
    kind: PhantomData<fn() -> K>,
}

impl<B, K> Clone for RateLimitLayer<B, K> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            shared: Arc::clone(&self.shared),
            kind: PhantomData,
        }
    }
}

impl<B, K> fmt::Debug for RateLimitLayer<B, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.shared.policies.iter().map(|p| &*p.name).collect();
        f.debug_struct("RateLimitLayer")
            .field("policies", &names)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<B: Backend> RateLimitLayer<B> {
    /// A layer with the default options: cost 1, `RateLimit-Policy` and `RateLimit` on every
    /// response, a 400 for a request with no key.
    pub fn new(backend: B) -> RateLimitLayer<B> {
        RateLimitLayer::builder(backend).build()
    }

    /// A builder to set the options.
    pub fn builder(backend: B) -> RateLimitBuilder<B> {
        let ietf = FieldChoice {
            ietf: true,
            legacy: false,
        };
        RateLimitBuilder {
            backend,
            kind: PhantomData,
            options: Options {
                cost: None,
                missing_key: MissingKey::default(),
                shadow: false,
                refund_if: None,
                refund_on_drop: false,
                on_allowed: ietf,
                on_denied: ietf,
                partition_key: false,
                problem_json: false,
                denial: None,
            },
        }
    }
}

impl<B, K> RateLimitLayer<B, K> {
    /// Counts of the answers so far.
    pub fn stats(&self) -> LayerStats {
        self.shared.counters.snapshot()
    }
}

/// Options of a [`RateLimitLayer`].
pub struct RateLimitBuilder<B, K = SameBody> {
    backend: B,
    kind: PhantomData<fn() -> K>,
    options: Options,
}

impl<B: Backend> RateLimitBuilder<B, SameBody> {
    /// Wraps every response body in a [`RateLimitBody`](super::RateLimitBody), for inner
    /// services whose body type cannot be built from `Bytes` (tonic's, a boxed body), so that
    /// the layer can answer in it. Not needed with axum, whose `Body` the layer writes its
    /// answers in directly; there a wrapper would only cost time (axum boxes every body
    /// that is not its own).
    pub fn wrap_body(self) -> RateLimitBuilder<B, WrappedBody> {
        RateLimitBuilder {
            backend: self.backend,
            kind: PhantomData,
            options: self.options,
        }
    }
}

impl<B: Backend, K> RateLimitBuilder<B, K> {
    /// The tokens a request costs (default 1): by route, by `Content-Length`, by method. A
    /// cost of 0 is a peek (always admitted, nothing spent); one above a policy's burst can
    /// never pass and is refused without `Retry-After`.
    pub fn cost(mut self, cost: impl Fn(&RequestHead<'_>) -> u32 + Send + Sync + 'static) -> Self {
        self.options.cost = Some(Box::new(cost));
        self
    }

    /// What to do with a request a policy finds no key for, for the policies that did not
    /// choose ([`Keyed::missing_key`](super::Keyed::missing_key)); default 400, logged at
    /// debug level. Redis policies have no choice of their own and follow this one.
    pub fn missing_key(mut self, missing: MissingKey) -> Self {
        self.options.missing_key = missing;
        self
    }

    /// Shadow mode: decide, count and write the headers, but never refuse (not even a request
    /// without a key). For rolling a limit out: [`LayerStats::shadow_denied`] counts what
    /// it would have refused.
    pub fn shadow(mut self, on: bool) -> Self {
        self.options.shadow = on;
        self
    }

    /// Gives an admitted request's tokens back when its response matches `predicate`: count
    /// only failed logins (`|r| r.status.is_success()`, fail2ban style), or give back what the
    /// server chose not to do (`|r| r.status == StatusCode::NOT_MODIFIED`).
    ///
    /// Do not refund server errors (`|r| r.status.is_server_error()`): an attacker can cause
    /// them (a 503 or 504 from an inner timeout under load, a 500 from a caught panic), and
    /// refunding them makes requests free exactly under overload, when the limit matters
    /// most. A predicate on 5xx is safe only if it names statuses the server decides alone,
    /// such as `|r| r.status == StatusCode::NOT_IMPLEMENTED`.
    ///
    /// The predicate runs only on a response: a request whose future is dropped after its
    /// admission (the client hung up before the response) or whose inner service returned
    /// an error keeps its charge, unless [`refund_on_drop`](Self::refund_on_drop).
    ///
    /// # Errors
    /// [`RefundUnsupported`] if the backend cannot refund exactly (every backend of this crate
    /// can: a Redis refund gives back under the quota the request was charged).
    pub fn refund_if(
        mut self,
        predicate: impl Fn(&response::Parts) -> bool + Send + Sync + 'static,
    ) -> Result<Self, RefundUnsupported> {
        if let Some(why) = self.backend.refund_unsupported() {
            return Err(RefundUnsupported(why));
        }
        self.options.refund_if = Some(Box::new(predicate));
        Ok(self)
    }

    /// Gives an admitted request's tokens back when it gets no response: the server dropped
    /// its future (the client went away) or the inner service returned an error (default
    /// no: charged). A client can then hang up before the response to have its request for
    /// free, so turn it on only where the work happens while the response is sent (a
    /// download, a stream), not before it.
    ///
    /// # Errors
    /// [`RefundUnsupported`] if the backend cannot refund exactly.
    pub fn refund_on_drop(mut self, on: bool) -> Result<Self, RefundUnsupported> {
        if let Some(why) = self.backend.refund_unsupported() {
            return Err(RefundUnsupported(why));
        }
        self.options.refund_on_drop = on;
        Ok(self)
    }

    /// Whether admitted responses carry `RateLimit-Policy` and `RateLimit` (default yes).
    /// Without them (and without [`legacy_headers`](Self::legacy_headers) or refunds) an
    /// admission records nothing, and a lone in-process policy decides it with its check
    /// alone: the layer's cheapest path (BENCHMARKS.md, *HTTP layer*). Refusals carry them
    /// either way, as [`headers_on_denied`](Self::headers_on_denied) says.
    pub fn headers_on_allowed(mut self, on: bool) -> Self {
        self.options.on_allowed.ietf = on;
        self
    }

    /// Whether the answers to denied requests carry `RateLimit-Policy` and `RateLimit`
    /// (default yes).
    pub fn headers_on_denied(mut self, on: bool) -> Self {
        self.options.on_denied.ietf = on;
        self
    }

    /// Whether responses also carry `X-RateLimit-Limit`, `-Remaining` and `-Reset` (seconds
    /// until the bucket is full), for the policy with the fewest tokens left (default no).
    pub fn legacy_headers(mut self, on: bool) -> Self {
        self.options.on_allowed.legacy = on;
        self.options.on_denied.legacy = on;
        self
    }

    /// Whether `RateLimit` items carry `pk`, the partition key: a 64-bit keyed hash of the key
    /// under a secret chosen per layer, so it identifies the bucket without revealing the key
    /// (default no).
    pub fn partition_key(mut self, on: bool) -> Self {
        self.options.partition_key = on;
        self
    }

    /// Whether a 429 has an `application/problem+json` body of the draft's `quota-exceeded`
    /// type, with the `violated-policies` (default: a one-line `text/plain` body).
    pub fn problem_json(mut self, on: bool) -> Self {
        self.options.problem_json = on;
        self
    }

    /// Writes the answers to denied requests with `respond` instead. The layer then adds `Retry-After` (HTTP) and the
    /// rate limit headers the response does not already have.
    pub fn on_denied(
        mut self,
        respond: impl Fn(&Denial<'_>) -> Response<Bytes> + Send + Sync + 'static,
    ) -> Self {
        self.options.denial = Some(Box::new(respond));
        self
    }

    /// The layer. Starts the idle-key eviction thread of each keyed policy's limiter that has
    /// none yet (one per limiter, however many layers share it). The layer's
    /// `RateLimit-Policy` value (tens of bytes) lives as long as the process, made once per
    /// distinct value however many layers state it, so that responses copy it rather than
    /// share it (docs/design.md, section 9); a process keeps at most 4,096 such values, and
    /// the layers built after that write theirs per response. It states the
    /// quotas the policies' limiters had when the policies were made; after a
    /// [`Limiter::set_quota`](cellrate::Limiter::set_quota) (a keyed limiter's quota is fixed
    /// when it is built), and for a tier other than a keyed limiter's own, each response states
    /// the quota in force instead, in a value written for it.
    pub fn build(self) -> RateLimitLayer<B, K> {
        let policies = self.backend.policies();
        let static_policy = static_value(&policy_field(&policies, &[None; MAX_POLICIES]));
        self.backend.start_upkeep();
        let on_allowed = self.options.on_allowed;
        let records_admissions = on_allowed.ietf || on_allowed.legacy || self.options.refunds();
        RateLimitLayer {
            kind: PhantomData,
            shared: Arc::new(Shared {
                records_admissions,
                backend: self.backend,
                policies,
                static_policy,
                options: self.options,
                counters: Counters::default(),
                faults: FaultLog::default(),
                hasher: RandomState::new(),
            }),
        }
    }
}

impl<S, B, K> Layer<S> for RateLimitLayer<B, K> {
    type Service = RateLimit<S, B, K>;

    fn layer(&self, inner: S) -> RateLimit<S, B, K> {
        RateLimit {
            inner,
            shared: Arc::clone(&self.shared),
            kind: PhantomData,
        }
    }
}

/// [`RateLimitBuilder::refund_if`] with a backend that cannot give tokens back exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefundUnsupported(&'static str);

impl core::fmt::Display for RefundUnsupported {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "refunds are not supported here: {}", self.0)
    }
}

impl std::error::Error for RefundUnsupported {}
