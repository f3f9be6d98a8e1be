//! `RateLimitBody`: the inner service's body, or the layer's own (a refusal), unboxed.

use bytes::Bytes;
use core::pin::Pin;
use core::task::{Context, Poll};
use http_body::{Body, Frame, SizeHint};

pin_project_lite::pin_project! {
    /// The body of a response that went through the layer: the inner service's, untouched, or
    /// the one the layer wrote (a refusal).
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

impl<B> RateLimitBody<B> {
    /// A body of `data` (empty when `data` is).
    pub(crate) fn full(data: Bytes) -> Self {
        RateLimitBody::Full {
            data: (!data.is_empty()).then_some(data),
        }
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
