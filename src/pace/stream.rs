//! `Paced`: a stream whose items wait for their tokens.

use super::pacer::Pacer;
use crate::all_of::Limit;
use core::ops::Deref;
use core::pin::Pin;
use core::task::{Context, Poll};
use futures_core::Stream;

pin_project_lite::pin_project! {
    /// A stream that hands on each item of `S` once its tokens are there. Made by
    /// [`PaceExt::paced`](super::PaceExt::paced) and
    /// [`PaceExt::paced_by`](super::PaceExt::paced_by); see the [module docs](super).
    #[must_use = "streams do nothing unless polled"]
    pub struct Paced<S: Stream, L: Deref, F>
    where
        L::Target: Limit,
    {
        #[pin]
        inner: S,
        cost: F,
        pacer: Pacer<L>,
        waiting: Option<S::Item>,
    }
}

impl<S: Stream, L: Deref, F> Paced<S, L, F>
where
    L::Target: Limit,
    F: FnMut(&S::Item) -> u32,
{
    pub(super) fn new(inner: S, limit: L, cost: F) -> Self {
        Paced {
            inner,
            cost,
            pacer: Pacer::new(limit),
            waiting: None,
        }
    }

    /// The stream being paced.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The stream being paced, and the item waiting for its tokens, if any: that item was not
    /// handed on, so the tokens it booked are given back.
    pub fn into_inner(self) -> (S, Option<S::Item>) {
        let Paced {
            inner,
            mut pacer,
            waiting,
            ..
        } = self;
        pacer.finish();
        (inner, waiting)
    }
}

impl<S: Stream, L: Deref, F> Stream for Paced<S, L, F>
where
    L::Target: Limit,
    F: FnMut(&S::Item) -> u32,
{
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let mut this = self.project();
        loop {
            if this.waiting.is_some() {
                if this.pacer.poll_ready(cx).is_pending() {
                    return Poll::Pending;
                }
                this.pacer.hand_on();
                return Poll::Ready(this.waiting.take());
            }
            match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(item)) => {
                    this.pacer.start((this.cost)(&item));
                    *this.waiting = Some(item);
                }
                other => return other,
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let waiting = usize::from(self.waiting.is_some());
        let (low, high) = self.inner.size_hint();
        (
            low.saturating_add(waiting),
            high.and_then(|h| h.checked_add(waiting)),
        )
    }
}
