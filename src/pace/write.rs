//! `PacedWrite`: a writer that passes bytes on at most as fast as the quota, a token a byte.

use super::pacer::Pacer;
use crate::all_of::Limit;
use core::ops::Deref;
use core::pin::Pin;
use core::task::{Context, Poll};
use futures_io::AsyncWrite;
use std::io;

pin_project_lite::pin_project! {
    /// A writer that passes bytes on to `W` at most as fast as the limit's quota, one token a
    /// byte. A write books the bytes it will offer the inner writer, waits until they are
    /// there, then offers them; bytes the inner writer does not take are given back. How many
    /// bytes a write books is learned from the inner writer: no more than it took last time
    /// (twice that once it takes all it is offered), so that a writer whose inner writer takes
    /// little at a time does not hold a whole burst of everyone's queue time. Made by
    /// [`PaceExt::paced_write`](super::PaceExt::paced_write); see the [module docs](super).
    pub struct PacedWrite<W, L: Deref>
    where
        L::Target: Limit,
    {
        #[pin]
        inner: W,
        pacer: Pacer<L>,
        // Bytes booked for the write being made (waited for, or offered to the inner writer).
        booked: usize,
        // The most bytes the next write books: learned from what the inner writer takes.
        learned: u32,
    }
}

impl<W: AsyncWrite, L: Deref> PacedWrite<W, L>
where
    L::Target: Limit,
{
    pub(super) fn new(inner: W, limit: L) -> Self {
        PacedWrite {
            inner,
            pacer: Pacer::new(limit),
            booked: 0,
            learned: u32::MAX,
        }
    }

    /// The writer being paced.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The writer being paced, mutably. Bytes written to it directly are not paced.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// The writer being paced; the tokens of a write in progress are given back.
    pub fn into_inner(self) -> W {
        let PacedWrite {
            inner, mut pacer, ..
        } = self;
        pacer.cancel();
        inner
    }
}

impl<W: AsyncWrite, L: Deref> AsyncWrite for PacedWrite<W, L>
where
    L::Target: Limit,
{
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        if buf.is_empty() {
            return this.inner.poll_write(cx, buf);
        }
        if !this.pacer.is_busy() {
            let want = u32::try_from(buf.len()).unwrap_or(u32::MAX);
            let part = want.min(this.pacer.burst()).min(*this.learned).max(1);
            this.pacer.start(part);
            *this.booked = part as usize;
        }
        if this.pacer.poll_ready(cx).is_pending() {
            return Poll::Pending;
        }
        // The caller may offer fewer bytes than were booked for its previous, larger offer.
        let offer = (*this.booked).min(buf.len());
        // Pending here keeps the booking: the same bytes are offered again. A writer dropped
        // meanwhile gives them back.
        let written = futures_core::ready!(this.inner.poll_write(cx, &buf[..offer]));
        let used = written.as_ref().map_or(0, |&n| n.min(offer));
        this.pacer
            .hand_on_using(u32::try_from(used).unwrap_or(u32::MAX));
        *this.booked = 0;
        if written.is_ok() {
            let used = u32::try_from(used).unwrap_or(u32::MAX);
            *this.learned = if used < offer as u32 {
                used.max(1)
            } else {
                used.saturating_mul(2)
            };
        }
        Poll::Ready(written)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        // Closing: a write that was booked and never made gives its tokens back.
        this.pacer.cancel();
        *this.booked = 0;
        this.inner.poll_close(cx)
    }
}
