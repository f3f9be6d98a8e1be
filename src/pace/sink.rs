//! `PacedSink`: a sink that forwards each item once its tokens are there.

use super::pacer::Pacer;
use crate::all_of::Limit;
use core::ops::Deref;
use core::pin::Pin;
use core::task::{Context, Poll};
use futures_sink::Sink;

pin_project_lite::pin_project! {
    /// A sink that forwards each item to `S` once `cost(&item)` tokens are there. It holds one
    /// item while it waits: `poll_ready` and `poll_flush` are ready once that item has gone on.
    /// An item held when the sink is dropped (waiting for its tokens, or for the inner sink to
    /// be ready) gives its tokens back.
    /// Made by [`PaceExt::paced_sink_by`](super::PaceExt::paced_sink_by); see the
    /// [module docs](super).
    #[must_use = "sinks do nothing unless polled"]
    pub struct PacedSink<S, L: Deref, F, Item>
    where
        L::Target: Limit,
    {
        #[pin]
        inner: S,
        cost: F,
        pacer: Pacer<L>,
        waiting: Option<Item>,
    }
}

impl<S: Sink<Item>, L: Deref, F, Item> PacedSink<S, L, F, Item>
where
    L::Target: Limit,
    F: FnMut(&Item) -> u32,
{
    pub(super) fn new(inner: S, limit: L, cost: F) -> Self {
        PacedSink {
            inner,
            cost,
            pacer: Pacer::new(limit),
            waiting: None,
        }
    }

    /// The sink being fed.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The sink being fed, and the item held for its tokens, if any: that item was not
    /// forwarded, so the tokens it booked are given back.
    pub fn into_inner(self) -> (S, Option<Item>) {
        let PacedSink {
            inner,
            mut pacer,
            waiting,
            ..
        } = self;
        pacer.finish();
        (inner, waiting)
    }

    /// Waits for the held item's tokens, then hands it to the inner sink.
    fn poll_forward(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        let mut this = self.project();
        if this.waiting.is_none() {
            return Poll::Ready(Ok(()));
        }
        if this.pacer.poll_ready(cx).is_pending() {
            return Poll::Pending;
        }
        if let Err(e) = futures_core::ready!(this.inner.as_mut().poll_ready(cx)) {
            return Poll::Ready(Err(e));
        }
        let item = this.waiting.take().expect("checked above");
        this.pacer.hand_on();
        Poll::Ready(this.inner.start_send(item))
    }
}

impl<S: Sink<Item>, L: Deref, F, Item> Sink<Item> for PacedSink<S, L, F, Item>
where
    L::Target: Limit,
    F: FnMut(&Item) -> u32,
{
    type Error = S::Error;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        futures_core::ready!(self.as_mut().poll_forward(cx))?;
        self.project().inner.poll_ready(cx)
    }

    fn start_send(self: Pin<&mut Self>, item: Item) -> Result<(), S::Error> {
        let this = self.project();
        this.pacer.start((this.cost)(&item));
        *this.waiting = Some(item);
        Ok(())
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        futures_core::ready!(self.as_mut().poll_forward(cx))?;
        self.project().inner.poll_flush(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        futures_core::ready!(self.as_mut().poll_forward(cx))?;
        self.project().inner.poll_close(cx)
    }
}
