//! `PacedWrite`: a writer that passes bytes on at most as fast as the quota, a token a byte.

use super::pacer::Pacer;
use crate::all_of::Limit;
use core::ops::Deref;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use futures_io::AsyncWrite;
use std::io;

/// How long after its bytes were first offered to the inner writer the rest of a booking is
/// offered to the next writes before it is given back, so that bytes held back never add to a
/// fresh burst.
pub const WRITE_HOLD: Duration = Duration::from_millis(5);

pin_project_lite::pin_project! {
    /// A writer that passes bytes on to `W` at most as fast as the limit's quota, one token a
    /// byte.
    ///
    /// A write books the bytes it is offered, at most half the burst (docs/design.md §4,
    /// *Pacing*), waits until they are there, then offers them to the inner writer. Bytes it
    /// did not take are offered to the next writes for up to [`WRITE_HOLD`], then given back,
    /// as they are when the writer is closed, turned back into its inner writer or dropped: it
    /// pays for what it writes, no more.
    ///
    /// Made by [`PaceExt::paced_write`](super::PaceExt::paced_write); see the
    /// [module docs](super).
    pub struct PacedWrite<W, L: Deref>
    where
        L::Target: Limit,
    {
        #[pin]
        inner: W,
        pacer: Pacer<L>,
        // When the current booking was first offered to the inner writer, by the bucket's time.
        offered_at: Option<crate::Nanos>,
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
            offered_at: None,
        }
    }

    /// The writer being paced.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The writer being paced; booked bytes it did not take are given back.
    pub fn into_inner(self) -> W {
        let PacedWrite {
            inner, mut pacer, ..
        } = self;
        pacer.finish();
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
        if let Some(first) = *this.offered_at {
            if this.pacer.now().saturating_duration_since(first) > WRITE_HOLD {
                this.pacer.finish();
                *this.offered_at = None;
            }
        }
        if !this.pacer.is_busy() {
            let want = u32::try_from(buf.len()).unwrap_or(u32::MAX);
            this.pacer.start(want.min(this.pacer.burst() / 2).max(1));
        }
        if this.pacer.poll_ready(cx).is_pending() {
            return Poll::Pending;
        }
        if this.offered_at.is_none() {
            *this.offered_at = Some(this.pacer.now());
        }
        let offer = (this.pacer.untaken() as usize).min(buf.len());
        // Pending keeps the booking: the same bytes are offered again, within the hold.
        let written = futures_core::ready!(this.inner.poll_write(cx, &buf[..offer]));
        match &written {
            Ok(n) => {
                // An inner writer that claims more than it was offered took what it was offered.
                this.pacer.take((*n).min(offer) as u32);
                if !this.pacer.is_busy() {
                    *this.offered_at = None;
                }
            }
            Err(_) => {
                this.pacer.finish();
                *this.offered_at = None;
            }
        }
        Poll::Ready(written)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        // Closing: booked bytes that were not taken are given back.
        this.pacer.finish();
        *this.offered_at = None;
        this.inner.poll_close(cx)
    }
}
