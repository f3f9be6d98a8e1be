//! `RateLimit`: the service. Readiness passes through; the decision is made in `call`.

use super::backend::{Backend, Decision, How, Outcome, Verdict};
use super::body::RateLimitBody;
use super::future::{After, ResponseFuture};
use super::headers::Fields;
use super::key::{MissingKey, RequestHead};
use super::layer::Shared;
use super::refusal::{is_grpc, plain, refuse};
use super::stats::Counters;
use bytes::Bytes;
use core::task::{Context, Poll};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body::Body;
use std::sync::Arc;
use tower_service::Service;

/// The service a [`RateLimitLayer`](super::RateLimitLayer) wraps around another. Cheap to
/// clone; clones share the limiters.
///
/// `poll_ready` is the inner service's: the decision needs the request (its key, its cost),
/// so it is made in `call`. A refusal is a response (429, or `RESOURCE_EXHAUSTED` for gRPC),
/// never a service error, so axum needs no `HandleErrorLayer`.
pub struct RateLimit<S, B> {
    pub(crate) inner: S,
    pub(crate) shared: Arc<Shared<B>>,
}

impl<S: Clone, B> Clone for RateLimit<S, B> {
    fn clone(&self) -> Self {
        RateLimit {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S, B, ReqB, ResB> Service<Request<ReqB>> for RateLimit<S, B>
where
    S: Service<Request<ReqB>, Response = Response<ResB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqB: Send + 'static,
    ResB: Body<Data = Bytes> + Send + 'static,
    B: Backend,
{
    type Response = Response<RateLimitBody<ResB>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, ResB, S::Error, B>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    #[inline]
    fn call(&mut self, req: Request<ReqB>) -> Self::Future {
        let shared = &self.shared;
        let head = RequestHead::of(&req);
        let cost = shared.options.cost.as_ref().map_or(1, |cost| cost(&head));
        let how = How {
            skip_missing: shared.options.missing_key == MissingKey::Skip,
            partition: shared.options.partition_key.then_some(&shared.hasher),
            ticket: shared.options.refund_if.is_some(),
            figures: shared.options.on_allowed.ietf || shared.options.on_allowed.legacy,
        };
        match shared.backend.decide(&head, cost, &how) {
            Decision::Ready(mut verdict) => {
                match admit(shared, &mut verdict, cost, req.headers()) {
                    Ok(after) => ResponseFuture::called(self.inner.call(req), after),
                    Err(answer) => ResponseFuture::done(answer),
                }
            }
            Decision::Pending(decision) => {
                // The inner service was made ready: take it, leave a clone in its place.
                let ready = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, ready);
                let shared = Arc::clone(shared);
                ResponseFuture::boxed(Box::pin(async move {
                    match admit(&shared, &mut decision.await, cost, req.headers()) {
                        Ok(after) => Ok(after.apply(inner.call(req).await?)),
                        Err(answer) => Ok(answer),
                    }
                }))
            }
        }
    }
}

/// Lets the request through (with what to do to its response) or answers it.
// The answer is the response itself, returned by value: boxing it would allocate per refusal.
#[allow(clippy::result_large_err)]
fn admit<B: Backend, ResB>(
    shared: &Arc<Shared<B>>,
    verdict: &mut Verdict<B::Ticket>,
    cost: u32,
    request_headers: &HeaderMap,
) -> Result<After<B>, Response<RateLimitBody<ResB>>> {
    let options = &shared.options;
    let counters = &shared.counters;
    let fields = |verdict: &Verdict<B::Ticket>| {
        Fields::new(
            options.on_allowed,
            &shared.policies,
            &shared.static_policy,
            &verdict.states,
            &verdict.quotas,
        )
    };
    match &verdict.outcome {
        Outcome::Allowed => {
            Counters::bump(&counters.allowed);
            let fields = fields(verdict);
            let refund = match (&options.refund_if, verdict.ticket.take()) {
                (Some(_), Some(ticket)) => Some((Arc::clone(shared), ticket, cost)),
                _ => None,
            };
            Ok(After::new(fields, refund))
        }
        Outcome::Refused(_) if options.shadow => {
            Counters::bump(&counters.shadow_refused);
            Ok(After::new(fields(verdict), None))
        }
        Outcome::Refused(retry_after) => {
            Counters::bump(&counters.refused);
            // Only a refusal depends on the protocol: gRPC answers in its own status.
            let grpc = is_grpc(request_headers);
            Err(refuse(shared, verdict, *retry_after, cost, grpc))
        }
        Outcome::NoKey(e) => {
            Counters::bump(&counters.no_key);
            if options.shadow {
                tracing::warn!("rate limit (shadow): no key for the request: {e}");
                return Ok(After::new(Fields::default(), None));
            }
            let answer = match options.missing_key {
                MissingKey::Reject(status) => {
                    tracing::debug!("rate limit: request rejected with {status}: {e}");
                    plain(status, String::new())
                }
                _ => {
                    tracing::error!("rate limit: no key for the request, answered 500: {e}");
                    plain(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "Internal Server Error: no rate limit key for this request \
                         (the server log says why)\n"
                            .into(),
                    )
                }
            };
            Err(answer.map(RateLimitBody::full))
        }
    }
}
