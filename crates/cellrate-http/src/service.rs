//! `RateLimit`: the service. Readiness passes through; the decision is made in `call`.

#[cfg(feature = "redis")]
use super::answers::fault;
use super::answers::{deny, no_key};
use super::backend::{Backend, Decision, How, Outcome, Pending, Verdict};
use super::body::{BodyKind, SameBody};
use super::future::{After, Refund, ResponseFuture};
use super::grpc::Grpc;
use super::headers::Fields;
use super::key::RequestHead;
use super::shared::Shared;
use super::stats::Count;
use bytes::Bytes;
use core::marker::PhantomData;
use core::task::{Context, Poll};
use http::{HeaderMap, Request, Response};
use std::sync::Arc;
use tower_service::Service;

/// The service a [`RateLimitLayer`](super::RateLimitLayer) wraps around another. Cheap to
/// clone; clones share the limiters.
///
/// `poll_ready` is the inner service's: the decision needs the request (its key, its cost),
/// so it is made in `call`. A refusal is a response (429, or `RESOURCE_EXHAUSTED` for gRPC),
/// never a service error, so axum needs no `HandleErrorLayer`. `K` says how responses carry
/// their bodies ([`SameBody`] unless the layer was built with
/// [`wrap_body`](super::RateLimitBuilder::wrap_body)).
pub struct RateLimit<S, B, K = SameBody> {
    pub(crate) inner: S,
    pub(crate) shared: Arc<Shared<B>>,
    pub(crate) kind: PhantomData<fn() -> K>,
}

impl<S: Clone, B, K> Clone for RateLimit<S, B, K> {
    fn clone(&self) -> Self {
        RateLimit {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
            kind: PhantomData,
        }
    }
}

impl<S, B, K, ReqB, ResB> Service<Request<ReqB>> for RateLimit<S, B, K>
where
    S: Service<Request<ReqB>, Response = Response<ResB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqB: Send + 'static,
    ResB: Send + 'static,
    B: Backend,
    K: BodyKind<ResB>,
    K::Body: Send + 'static,
{
    type Response = Response<K::Body>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, B, K, ResB, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    // Out of line: inlined into the services around it (`MapErr`, axum's `MapIntoResponse`),
    // the future was built on the stack and then copied into the wrapper's; called, it is
    // built in the caller's slot.
    #[inline(never)]
    fn call(&mut self, req: Request<ReqB>) -> Self::Future {
        let shared = &self.shared;
        let options = &shared.options;
        let head = RequestHead::of(&req);
        let cost = options.cost.as_ref().map_or(1, |cost| cost(&head));
        let how = How::new(options, &shared.hasher);
        if !shared.records_admissions {
            // Most requests: admitted, and nothing to do to their responses.
            let Some(decision) = shared.backend.decide_plain(&head, cost, &how) else {
                shared.counters.bump(Count::Allowed);
                return ResponseFuture::passed(self.inner.call(req));
            };
            return self.decided(req, cost, decision);
        }
        let mut verdict = Verdict::bare(Outcome::Allowed);
        if let Some(pending) = shared.backend.decide(&head, cost, &how, &mut verdict) {
            return self.after_pending(req, cost, pending);
        }
        self.respond(req, cost, &mut verdict)
    }
}

/// The services a [`RateLimit`] wraps, for requests with body `ReqB` and responses with body
/// `ResB`: the bounds of its `Service` impl, named once for the methods its `call` hands on to.
trait Wrapped<ReqB, ResB>:
    Service<Request<ReqB>, Response = Response<ResB>, Future: Send + 'static, Error: Send + 'static>
    + Clone
    + Send
    + 'static
{
}

impl<S, ReqB, ResB> Wrapped<ReqB, ResB> for S where
    S: Service<
            Request<ReqB>,
            Response = Response<ResB>,
            Future: Send + 'static,
            Error: Send + 'static,
        > + Clone
        + Send
        + 'static
{
}

impl<S, B: Backend, K> RateLimit<S, B, K> {
    /// The future of a request [`decide_plain`](super::backend::sealed::Backend::decide_plain)
    /// did not admit. Out of line: the admissions beside it stay a few cache lines of code.
    #[inline(never)]
    fn decided<ReqB: Send + 'static, ResB: Send + 'static>(
        &mut self,
        req: Request<ReqB>,
        cost: u32,
        decision: Decision<B::Ticket>,
    ) -> ResponseFuture<S::Future, B, K, ResB, S::Error>
    where
        S: Wrapped<ReqB, ResB>,
        K: BodyKind<ResB, Body: Send + 'static>,
    {
        match decision {
            Decision::Made(mut verdict) => self.respond(req, cost, &mut verdict),
            Decision::Pending(pending) => self.after_pending(req, cost, pending),
        }
    }

    /// The future of a request decided in `verdict`: the inner service's, with what the layer
    /// adds to its response, or the layer's own answer.
    #[inline]
    fn respond<ReqB: Send + 'static, ResB: Send + 'static>(
        &mut self,
        req: Request<ReqB>,
        cost: u32,
        verdict: &mut Verdict<B::Ticket>,
    ) -> ResponseFuture<S::Future, B, K, ResB, S::Error>
    where
        S: Wrapped<ReqB, ResB>,
        K: BodyKind<ResB, Body: Send + 'static>,
    {
        match admit(&self.shared, verdict, cost, req.headers()) {
            Ok(None) => ResponseFuture::passed(self.inner.call(req)),
            Ok(Some(after)) => ResponseFuture::called(self.inner.call(req), after),
            Err(answer) => ResponseFuture::answered(answer),
        }
    }

    /// The future of a request whose decision is to come: the decision, then the inner
    /// service or the layer's answer.
    #[inline(never)]
    fn after_pending<ReqB: Send + 'static, ResB: Send + 'static>(
        &mut self,
        req: Request<ReqB>,
        cost: u32,
        pending: Pending<B::Ticket>,
    ) -> ResponseFuture<S::Future, B, K, ResB, S::Error>
    where
        S: Wrapped<ReqB, ResB>,
        K: BodyKind<ResB, Body: Send + 'static>,
    {
        // The inner service was made ready: take it, leave a clone in its place.
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let shared = Arc::clone(&self.shared);
        ResponseFuture::boxed(Box::pin(async move {
            match admit(&shared, &mut pending.await, cost, req.headers()) {
                Ok(None) => Ok(K::response(inner.call(req).await?)),
                Ok(Some(after)) => Ok(after.apply::<K, ResB>(inner.call(req).await?)),
                Err(answer) => Ok(answer.map(K::answer)),
            }
        }))
    }
}

/// Lets the request through (with what to do to its response, if anything) or answers it.
/// The admission with nothing to add is decided here; everything else is out of line, so
/// that the common path stays a few cache lines of code in the caller.
// The answer is the response itself, returned by value: boxing it would allocate per refusal.
#[allow(clippy::result_large_err)]
#[inline]
fn admit<B: Backend>(
    shared: &Arc<Shared<B>>,
    verdict: &mut Verdict<B::Ticket>,
    cost: u32,
    request_headers: &HeaderMap,
) -> Result<Option<After<B>>, Response<Bytes>> {
    let options = &shared.options;
    if let Outcome::Allowed = verdict.outcome {
        shared.counters.bump(Count::Allowed);
        let figures = options.on_allowed.ietf || options.on_allowed.legacy;
        if !figures && !options.refunds() {
            return Ok(None);
        }
        return Ok(Some(admitted(shared, verdict, cost)));
    }
    not_admitted(shared, verdict, cost, request_headers)
}

/// What to do to an admitted response: its headers, its refund.
#[inline(never)]
fn admitted<B: Backend>(
    shared: &Arc<Shared<B>>,
    verdict: &mut Verdict<B::Ticket>,
    cost: u32,
) -> After<B> {
    let options = &shared.options;
    let refund = match (options.refunds(), verdict.ticket.take()) {
        (true, Some(ticket)) => Some(Refund::new(Arc::clone(shared), ticket, cost)),
        _ => None,
    };
    After::new(fields(shared, verdict), refund)
}

/// The fields an admitted response carries.
fn fields<B: Backend>(shared: &Shared<B>, verdict: &Verdict<B::Ticket>) -> Fields {
    Fields::new(
        shared.options.on_allowed,
        &shared.policies,
        shared.static_policy,
        &verdict.states,
        &verdict.quotas,
    )
}

/// A request the limits refused, or that has no key: answered, or in shadow mode let through.
#[cold]
#[inline(never)]
#[allow(clippy::result_large_err)]
fn not_admitted<B: Backend>(
    shared: &Arc<Shared<B>>,
    verdict: &mut Verdict<B::Ticket>,
    cost: u32,
    request_headers: &HeaderMap,
) -> Result<Option<After<B>>, Response<Bytes>> {
    let options = &shared.options;
    let counters = &shared.counters;
    match &verdict.outcome {
        // Decided in `admit`, which counts it; here only for a whole match.
        Outcome::Allowed => Ok(Some(admitted(shared, verdict, cost))),
        Outcome::Denied(_) if options.shadow => {
            counters.bump(Count::ShadowDenied);
            Ok(Some(After::new(fields(shared, verdict), None)))
        }
        Outcome::Denied(retry_after) => {
            counters.bump(Count::Denied);
            // Only the layer's own answers depend on the protocol: gRPC answers in its status.
            let grpc = Grpc::of(request_headers);
            Err(deny(shared, verdict, *retry_after, cost, grpc))
        }
        Outcome::NoKey(e) => {
            counters.bump(Count::NoKey);
            if options.shadow {
                tracing::warn!("rate limit (shadow): no key for the request: {e}");
                return Ok(None);
            }
            let choice = verdict.missing.unwrap_or(options.missing_key);
            Err(no_key(e, choice, Grpc::of(request_headers), &shared.faults))
        }
        #[cfg(feature = "redis")]
        Outcome::Fault(f) => {
            counters.bump(Count::Fault);
            if options.shadow {
                tracing::warn!("rate limit (shadow): {}: {}", f.what, f.fix);
                return Ok(None);
            }
            Err(fault(f, Grpc::of(request_headers), &shared.faults))
        }
    }
}
