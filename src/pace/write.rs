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
    /// byte. A write books the bytes it will pass on (at most one burst), waits until they are
    /// there, then writes them; bytes the inner writer does not take are refunded. Made by
    /// [`PaceExt::paced_write`](super::PaceExt::paced_write); see the [module docs](super).
    pub struct PacedWrite<W, L: Deref>
    where
        L::Target: Limit,
    {
        #[pin]
        inner: W,
        pacer: Pacer<L>,
        // Bytes booked and waited for, to be written next.
        granted: usize,
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
            granted: 0,
        }
    }

    /// The writer being paced.
    pub fn get_ref(&self) -> &W {
        &self.inner
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
        if *this.granted == 0 && !this.pacer.is_busy() {
            let want = u32::try_from(buf.len()).unwrap_or(u32::MAX);
            let part = want.min(this.pacer.burst());
            this.pacer.start(part);
            *this.granted = part as usize;
        }
        if this.pacer.poll_ready(cx).is_pending() {
            return Poll::Pending;
        }
        // The caller may offer fewer bytes than were booked for its previous, larger offer.
        let take = (*this.granted).min(buf.len());
        let written = futures_core::ready!(this.inner.poll_write(cx, &buf[..take]));
        let paid = *this.granted;
        *this.granted = 0;
        let used = written.as_ref().map_or(0, |&n| n);
        if used < paid {
            // Bytes paid for but not passed on: give their tokens back.
            this.pacer
                .refund(u32::try_from(paid - used).unwrap_or(u32::MAX));
        }
        Poll::Ready(written)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_close(cx)
    }
}
