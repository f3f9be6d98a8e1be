//! `Pacer`: the booking and the timer that every paced adapter shares.

use crate::all_of::{sealed::Sealed as _, Limit};
use crate::bucket::Change;
use core::future::Future;
use core::ops::Deref;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use futures_timer::Delay;

/// A booking being waited for: its change (to cancel it), its cost and when it is there.
struct Booked {
    change: Change,
    cost: u32,
    ready_at: u64,
}

/// Books tokens for one item at a time and waits until they are there.
pub(super) struct Pacer<L: Deref>
where
    L::Target: Limit,
{
    limit: L,
    /// Tokens of the current item not yet booked.
    unbooked: u32,
    booked: Option<Booked>,
    delay: Option<Delay>,
}

impl<L: Deref> Pacer<L>
where
    L::Target: Limit,
{
    pub(super) fn new(limit: L) -> Self {
        Pacer {
            limit,
            unbooked: 0,
            booked: None,
            delay: None,
        }
    }

    /// Whether an item's tokens are being waited for.
    pub(super) fn is_busy(&self) -> bool {
        self.unbooked > 0 || self.booked.is_some()
    }

    /// Starts pacing an item of `cost` tokens.
    pub(super) fn start(&mut self, cost: u32) {
        debug_assert!(!self.is_busy());
        self.unbooked = cost;
    }

    /// Books what the current item still needs, a burst at a time, and waits for each part;
    /// ready when all of them are there.
    pub(super) fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            let bucket = self.limit.bucket_ref();
            let now = bucket.now().as_u64();
            if let Some(booked) = &self.booked {
                if now < booked.ready_at {
                    let wait = Duration::from_nanos(booked.ready_at - now);
                    let delay = self.delay.get_or_insert_with(|| Delay::new(wait));
                    if Pin::new(&mut *delay).poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    // The timer can fire a hair early on another clock: look again.
                    self.delay = None;
                    continue;
                }
                self.booked = None;
                self.delay = None;
            }
            if self.unbooked == 0 {
                return Poll::Ready(());
            }
            let part = self.unbooked.min(bucket.quota.burst());
            match bucket.book(part, now, u64::MAX) {
                Ok((change, booking)) => {
                    self.unbooked -= part;
                    self.booked = Some(Booked {
                        change,
                        cost: part,
                        ready_at: booking.ready_at,
                    });
                }
                // Only a TAT that would overflow u64 refuses a booking with no deadline: that
                // bucket can never serve the item, so its tokens are never handed on.
                Err(_) => return Poll::Pending,
            }
        }
    }

    /// Gives back the tokens of a booking not yet used (the last part of an item whose wait was
    /// abandoned, or bytes a writer did not pass on).
    pub(super) fn cancel(&mut self) {
        self.unbooked = 0;
        self.delay = None;
        if let Some(booked) = self.booked.take() {
            let bucket = self.limit.bucket_ref();
            if !bucket.restore(booked.change) {
                let now = bucket.now().as_u64();
                bucket.unbook(booked.change, booked.cost, now);
            }
        }
    }

    /// Gives back `n` tokens already spent (a writer that passed on fewer bytes than it paid
    /// for).
    pub(super) fn refund(&self, n: u32) {
        let bucket = self.limit.bucket_ref();
        bucket.refund(n, bucket.now().as_u64());
    }

    /// The most tokens one item may book at once: the limit's burst.
    pub(super) fn burst(&self) -> u32 {
        self.limit.bucket_ref().quota.burst()
    }
}

impl<L: Deref> Drop for Pacer<L>
where
    L::Target: Limit,
{
    fn drop(&mut self) {
        self.cancel();
    }
}
