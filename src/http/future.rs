//! `ResponseFuture`: the inner service's future with the headers (and a refund) applied to its
//! response, or the layer's own answer.

use super::backend::Backend;
use super::body::RateLimitBody;
use super::headers::Fields;
use super::layer::Shared;
use super::stats::Counters;
use core::future::Future;
use core::pin::Pin;
use core::task::{ready, Context, Poll};
use http::Response;
use std::sync::Arc;

type BoxedAnswer<ResB, E> =
    Pin<Box<dyn Future<Output = Result<Response<RateLimitBody<ResB>>, E>> + Send>>;

/// What happens to an admitted request's response.
pub(crate) struct After<B: Backend> {
    fields: Fields,
    refund: Option<(Arc<Shared<B>>, B::Ticket, u32)>,
}

impl<B: Backend> After<B> {
    pub(crate) fn new(fields: Fields, refund: Option<(Arc<Shared<B>>, B::Ticket, u32)>) -> Self {
        After { fields, refund }
    }

    /// Adds the headers, and refunds the request if its response matches the predicate.
    pub(crate) fn apply<ResB>(self, response: Response<ResB>) -> Response<RateLimitBody<ResB>> {
        let (mut parts, body) = response.into_parts();
        self.fields.append_to(&mut parts.headers);
        if let Some((shared, ticket, cost)) = self.refund {
            let matches = shared.options.refund_if.as_ref().is_some_and(|p| p(&parts));
            if matches {
                shared.backend.refund(ticket, cost);
                Counters::bump(&shared.counters.refunded);
            }
        }
        Response::from_parts(parts, RateLimitBody::Inner { body })
    }
}

pin_project_lite::pin_project! {
    /// The future of [`RateLimit`](super::RateLimit)'s response.
    pub struct ResponseFuture<F, ResB, E, B> where B: Backend {
        #[pin]
        kind: Kind<F, ResB, E, B>,
    }
}

pin_project_lite::pin_project! {
    #[project = KindProjection]
    enum Kind<F, ResB, E, B> where B: Backend {
        // Admitted and passed on.
        Called { #[pin] fut: F, after: Option<After<B>> },
        // Answered by the layer.
        Done { response: Option<Response<RateLimitBody<ResB>>> },
        // Waiting for a remote decision (Redis), then the inner service.
        Boxed { fut: BoxedAnswer<ResB, E> },
    }
}

impl<F, ResB, E, B: Backend> ResponseFuture<F, ResB, E, B> {
    pub(crate) fn called(fut: F, after: After<B>) -> Self {
        ResponseFuture {
            kind: Kind::Called {
                fut,
                after: Some(after),
            },
        }
    }

    pub(crate) fn done(response: Response<RateLimitBody<ResB>>) -> Self {
        ResponseFuture {
            kind: Kind::Done {
                response: Some(response),
            },
        }
    }

    pub(crate) fn boxed(fut: BoxedAnswer<ResB, E>) -> Self {
        ResponseFuture {
            kind: Kind::Boxed { fut },
        }
    }
}

impl<F, ResB, E, B> Future for ResponseFuture<F, ResB, E, B>
where
    F: Future<Output = Result<Response<ResB>, E>>,
    B: Backend,
{
    type Output = Result<Response<RateLimitBody<ResB>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProjection::Called { fut, after } => {
                let response = ready!(fut.poll(cx))?;
                let after = after
                    .take()
                    .expect("ResponseFuture polled after completion");
                Poll::Ready(Ok(after.apply(response)))
            }
            KindProjection::Done { response } => Poll::Ready(Ok(response
                .take()
                .expect("ResponseFuture polled after completion"))),
            KindProjection::Boxed { fut } => fut.as_mut().poll(cx),
        }
    }
}
