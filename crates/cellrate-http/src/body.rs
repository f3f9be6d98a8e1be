//! The body of a response that went through the layer: by default the inner service's own type,
//! untouched ([`SameBody`]); for a body type the layer cannot write its answers in,
//! [`RateLimitBody`] around it ([`WrappedBody`]).
//!
//! The default matters for speed: axum boxes every response body that is not its own `Body`
//! (an allocation and a free per request), so a wrapper type would cost each admitted request
//! more than its rate limit check.

use bytes::Bytes;
use core::pin::Pin;
use core::task::{Context, Poll};
use http_body::{Body, Frame, SizeHint};

/// How the responses of a layer carry their bodies: [`SameBody`] (the default) or
/// [`WrappedBody`]. Sealed.
pub trait BodyKind<ResB>: sealed::Sealed + Send + Sync + 'static {
    /// The body type of every response out of the layer.
    type Body;

    /// An admitted response's body.
    fn inner(body: ResB) -> Self::Body;

    /// An admitted response, with its body as [`inner`](Self::inner) makes it.
    fn response(response: http::Response<ResB>) -> http::Response<Self::Body>;

    /// The body of one of the layer's own answers (a refusal, a request without a key).
    fn answer(bytes: Bytes) -> Self::Body;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::SameBody {}
    impl Sealed for super::WrappedBody {}
}

/// The default: responses keep the inner service's body type, and the layer writes its own
/// answers in it from [`Bytes`]. For any body that is `From<Bytes>`: axum's `Body`,
/// http-body-util's `Full<Bytes>`. Nothing is wrapped, boxed or copied.
#[derive(Clone, Copy, Debug, Default)]
pub struct SameBody;

impl<ResB: From<Bytes>> BodyKind<ResB> for SameBody {
    type Body = ResB;

    #[inline]
    fn inner(body: ResB) -> ResB {
        body
    }

    #[inline]
    fn response(response: http::Response<ResB>) -> http::Response<ResB> {
        response // untouched: not even taken apart and put together again
    }

    #[inline]
    fn answer(bytes: Bytes) -> ResB {
        ResB::from(bytes)
    }
}

/// For a body type that cannot be built from bytes (tonic's, a boxed body): every response's
/// body becomes a [`RateLimitBody`] around it. Chosen with
/// [`RateLimitBuilder::wrap_body`](super::RateLimitBuilder::wrap_body).
#[derive(Clone, Copy, Debug, Default)]
pub struct WrappedBody;

impl<ResB> BodyKind<ResB> for WrappedBody {
    type Body = RateLimitBody<ResB>;

    #[inline]
    fn inner(body: ResB) -> RateLimitBody<ResB> {
        RateLimitBody::Inner { body }
    }

    #[inline]
    fn response(response: http::Response<ResB>) -> http::Response<RateLimitBody<ResB>> {
        response.map(Self::inner)
    }

    #[inline]
    fn answer(bytes: Bytes) -> RateLimitBody<ResB> {
        RateLimitBody::Full {
            data: (!bytes.is_empty()).then_some(bytes),
        }
    }
}

pin_project_lite::pin_project! {
    /// The body of a response through a [`WrappedBody`] layer: the inner service's, untouched,
    /// or the one the layer wrote (a refusal).
    // pin-project-lite takes no attributes on enum fields: the variants' docs name them.
    #[allow(missing_docs)]
    #[project = Projected]
    pub enum RateLimitBody<B> {
        /// The inner service's body (`body`).
        Inner {
            #[pin]
            body: B,
        },
        /// The layer's body: at most one chunk (`data`, until it is read).
        Full {
            data: Option<Bytes>,
        },
    }
}

impl<B: Body<Data = Bytes>> Body for RateLimitBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match self.project() {
            Projected::Inner { body } => body.poll_frame(cx),
            Projected::Full { data } => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RateLimitBody::Inner { body } => body.is_end_stream(),
            RateLimitBody::Full { data } => data.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RateLimitBody::Inner { body } => body.size_hint(),
            RateLimitBody::Full { data } => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
        }
    }
}
