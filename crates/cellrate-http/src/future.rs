//! `ResponseFuture`: the inner service's future with the headers (and a refund) applied to its
//! response, or the layer's own answer.

use super::backend::{sealed, Backend};
use super::body::BodyKind;
use super::headers::Fields;
use super::shared::Shared;
use super::stats::Count;
use core::future::Future;
use core::pin::Pin;
use core::task::{ready, Context, Poll};
use http::Response;
use std::sync::Arc;

/// A whole answer to come: a remote decision (Redis), then the inner service.
pub(crate) type BoxedAnswer<Body, E> =
    Pin<Box<dyn Future<Output = Result<Response<Body>, E>> + Send>>;

/// A refund to be made, or not, once the response is seen: the layer, the booking (boxed, as
/// the verdict holds it) and its cost. An admitted request whose response never comes (the
/// client went away and the server dropped its future, or the inner service failed) keeps its
/// charge, unless the layer refunds on drop.
pub(crate) struct Refund<B: Backend> {
    shared: Arc<Shared<B>>,
    ticket: Option<Box<<B as sealed::Backend>::Ticket>>,
    cost: u32,
}

impl<B: Backend> Refund<B> {
    pub(crate) fn new(shared: Arc<Shared<B>>, ticket: Box<B::Ticket>, cost: u32) -> Self {
        Refund {
            shared,
            ticket: Some(ticket),
            cost,
        }
    }

    /// Gives the tokens back if the response (`parts`) matches the layer's predicate. The
    /// booking is taken out first: with a response seen, nothing is given back on drop, not
    /// even if the predicate panics.
    fn settle(mut self, parts: &http::response::Parts) {
        let ticket = self.ticket.take();
        let shared = &self.shared;
        if shared.options.refund_if.as_ref().is_some_and(|p| p(parts)) {
            self.give_back(ticket);
        }
    }

    fn give_back(&self, ticket: Option<Box<B::Ticket>>) {
        if let Some(ticket) = ticket {
            self.shared.backend.refund(*ticket, self.cost);
            self.shared.counters.bump(Count::Refunded);
        }
    }
}

impl<B: Backend> Drop for Refund<B> {
    /// Without a response: given back only if the layer refunds on drop.
    fn drop(&mut self) {
        if self.shared.options.refund_on_drop {
            let ticket = self.ticket.take();
            self.give_back(ticket);
        }
    }
}

/// What happens to an admitted request's response: its header fields, and its refund. Rides
/// inline in the response future of every admission, so it holds little that needs dropping:
/// the refund, rare, is boxed (a future holding more drop glue inline was copied once more on
/// its way into axum's box, benches `http`).
pub(crate) struct After<B: Backend> {
    fields: Fields,
    refund: Option<Box<Refund<B>>>,
}

impl<B: Backend> After<B> {
    pub(crate) fn new(fields: Fields, refund: Option<Refund<B>>) -> Self {
        After {
            fields,
            refund: refund.map(Box::new),
        }
    }

    /// Adds the headers, and refunds the request if its response matches the predicate. Out
    /// of line: the admission with nothing to do, polled through, keeps its code compact.
    #[inline(never)]
    pub(crate) fn apply<K: BodyKind<ResB>, ResB>(
        self,
        mut response: Response<ResB>,
    ) -> Response<K::Body> {
        self.fields.append_to(response.headers_mut());
        let Some(refund) = self.refund else {
            return K::response(response);
        };
        let (parts, body) = response.into_parts();
        refund.settle(&parts);
        Response::from_parts(parts, K::inner(body))
    }
}

pin_project_lite::pin_project! {
    /// The future of [`RateLimit`](super::RateLimit)'s response.
    pub struct ResponseFuture<F, B, K, ResB, E>
    where
        B: Backend,
        K: BodyKind<ResB>,
    {
        #[pin]
        kind: Kind<F, B, K, ResB, E>,
    }
}

pin_project_lite::pin_project! {
    #[project = KindProjection]
    enum Kind<F, B, K, ResB, E>
    where
        B: Backend,
        K: BodyKind<ResB>,
    {
        // Admitted and passed on, with nothing to do to the response: its future, polled
        // through.
        Passed { #[pin] fut: F },
        // Admitted and passed on, the response to be changed.
        Called { #[pin] fut: F, after: Option<After<B>> },
        // Answered by the layer. Boxed: a response is larger than the rest of this future, which
        // every admitted request moves several times (axum boxes it).
        Done { response: Option<Box<Response<K::Body>>> },
        // Waiting for a remote decision (Redis), then the inner service.
        Boxed { fut: BoxedAnswer<K::Body, E> },
    }
}

impl<F, B: Backend, K: BodyKind<ResB>, ResB, E> ResponseFuture<F, B, K, ResB, E> {
    /// The future of an admitted request with nothing to do to its response.
    #[inline]
    pub(crate) fn passed(fut: F) -> Self {
        ResponseFuture {
            kind: Kind::Passed { fut },
        }
    }

    /// The future of an admitted request: `fut`, then `after` applied to its response.
    // Built with `after` empty, then given it: built whole at once, the inner future (hundreds
    // of bytes) was copied twice on the way to its place instead of being written there.
    #[inline]
    pub(crate) fn called(fut: F, after: After<B>) -> Self {
        let mut called = ResponseFuture {
            kind: Kind::Called { fut, after: None },
        };
        if let Kind::Called { after: slot, .. } = &mut called.kind {
            *slot = Some(after);
        }
        called
    }

    /// The layer's own answer, in the layer's body type. Out of line: a refusal is never the
    /// common path of the admissions it is beside.
    #[cold]
    #[inline(never)]
    pub(crate) fn answered(answer: Response<bytes::Bytes>) -> Self {
        ResponseFuture {
            kind: Kind::Done {
                response: Some(Box::new(answer.map(K::answer))),
            },
        }
    }

    pub(crate) fn boxed(fut: BoxedAnswer<K::Body, E>) -> Self {
        ResponseFuture {
            kind: Kind::Boxed { fut },
        }
    }
}

impl<F, B, K, ResB, E> Future for ResponseFuture<F, B, K, ResB, E>
where
    F: Future<Output = Result<Response<ResB>, E>>,
    B: Backend,
    K: BodyKind<ResB>,
{
    type Output = Result<Response<K::Body>, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProjection::Passed { fut } => fut.poll(cx).map_ok(K::response),
            KindProjection::Called { fut, after } => {
                let response = ready!(fut.poll(cx))?;
                let after = after
                    .take()
                    .expect("ResponseFuture polled after completion");
                Poll::Ready(Ok(after.apply::<K, ResB>(response)))
            }
            KindProjection::Done { response } => Poll::Ready(Ok(*response
                .take()
                .expect("ResponseFuture polled after completion"))),
            KindProjection::Boxed { fut } => fut.as_mut().poll(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::body::SameBody;
    use crate::{ClientIp, Keyed};
    use bytes::Bytes;
    use core::future::Future;
    use core::pin::Pin;

    type Inner = Pin<Box<dyn Future<Output = Result<http::Response<Bytes>, ()>> + Send>>;

    /// The response future is moved several times per request (axum boxes it): it holds the
    /// inner future, the header fields and a refund of three words, not a booking per policy.
    #[test]
    fn the_response_future_stays_small() {
        type B = Keyed<ClientIp, cellrate::TickClock>;
        let future = core::mem::size_of::<super::ResponseFuture<Inner, B, SameBody, Bytes, ()>>();
        let fields = core::mem::size_of::<crate::headers::Fields>();
        assert!(
            future <= core::mem::size_of::<Inner>() + fields + 32,
            "{future} bytes"
        );
    }
}
