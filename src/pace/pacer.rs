//! `Pacer`: the bookings and the timer that every paced adapter shares.

use crate::all_of::{sealed::Sealed as _, Limit};
use crate::clock::Clock;
use crate::engine::bucket_ref::BucketRef;
use crate::engine::counting::count_wait;
use crate::engine::give_back::Receipt;
use crate::nanos::Nanos;
use crate::quota::Quota;
use crate::wait::still_to_sleep;
use alloc::vec::Vec;
use core::future::Future;
use core::ops::Deref;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use futures_timer::Delay;

/// How long a pacer waits before booking again after a refusal that gives no time: a bucket
/// whose TAT is at the end of the clock (584 years on), which no booking can serve.
const NEVER_RETRY: Duration = Duration::from_secs(1);

/// One part of an item, booked: what gives it back, under which quota, and when it is there.
struct Booked {
    receipt: Receipt,
    quota: Quota,
    cost: u32,
    ready_at: Nanos,
}

/// Books tokens for one item at a time and waits until they are there.
///
/// The bookings of the current item are kept until the adapter hands the item on
/// ([`hand_on`](Self::hand_on), or [`take`](Self::take) for all of it): an item ended before
/// that ([`finish`](Self::finish), or a drop), waiting or not, gives back what it did not hand
/// on ([`Reservation::cancel`](crate::Reservation::cancel)'s rule).
pub(super) struct Pacer<L: Deref>
where
    L::Target: Limit,
{
    limit: L,
    /// Tokens of the current item not yet booked.
    unbooked: u32,
    /// The parts of the current item booked so far, the last one possibly not there yet.
    booked: Vec<Booked>,
    /// The timer of the wait for the last part.
    delay: Option<Delay>,
    /// The timer before booking again after a refusal.
    retry: Option<Delay>,
    /// How many times the current wait has slept (see `wait::still_to_sleep`).
    rounds: u32,
    /// Refusals in a row of the part being booked.
    refusals: u32,
    /// Tokens of the current item already handed on: a writer hands on an item (a booking of
    /// bytes) in as many inner writes as its inner writer needs.
    taken: u32,
    /// When the current item started pacing, by the bucket's time: what a named limiter
    /// counts as the time it waited. Read only for a named limiter.
    started: Nanos,
}

impl<L: Deref> Pacer<L>
where
    L::Target: Limit,
{
    pub(super) fn new(limit: L) -> Self {
        Pacer {
            limit,
            unbooked: 0,
            booked: Vec::new(),
            delay: None,
            retry: None,
            rounds: 0,
            refusals: 0,
            taken: 0,
            started: Nanos::ZERO,
        }
    }

    /// Whether an item is being paced (booked or waited for, not yet handed on).
    pub(super) fn is_busy(&self) -> bool {
        self.unbooked > 0 || !self.booked.is_empty()
    }

    pub(super) fn start(&mut self, cost: u32) {
        debug_assert!(!self.is_busy());
        self.unbooked = cost;
        if self.limit.named().is_some() {
            self.started = self.limit.bucket_ref().now();
        }
    }

    /// Books what the current item still needs, a burst at a time, and waits for each part;
    /// ready when all of them are there. Every `Pending` has a timer behind it.
    pub(super) fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            let bucket = self.limit.bucket_ref();
            if let Some(last) = self.booked.last() {
                // The time is looked at before the timer: a clock that moves by itself faster
                // than real time (a test's) ends the wait as soon as it says so.
                let wait = still_to_sleep(&bucket, last.ready_at, self.rounds == 0);
                if !wait.is_zero() && self.rounds <= crate::wait::MORE_SLEEPS {
                    if self.wait_out(wait, cx).is_pending() {
                        return Poll::Pending;
                    }
                    continue;
                }
                self.delay = None;
            }
            if let Some(retry) = &mut self.retry {
                if Pin::new(retry).poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.retry = None;
            }
            if self.unbooked == 0 {
                return Poll::Ready(());
            }
            self.rounds = 0;
            // The burst is read with the bucket it is booked in: a change that lowers it in
            // between makes the part too large, which the booking refuses with no time, and
            // the next round books a smaller part.
            let part = self.unbooked.min(bucket.quota.burst());
            let now = bucket.now();
            match bucket.book(part, now.as_u64(), u64::MAX) {
                Ok((receipt, booking)) => {
                    self.refusals = 0;
                    self.unbooked -= part;
                    self.booked.push(Booked {
                        receipt,
                        quota: bucket.quota,
                        cost: part,
                        ready_at: Nanos::new(booking.ready_at),
                    });
                }
                Err(denied) => {
                    // No room for the key (a keyed limit), or a quota changed under the part:
                    // book again when the refusal says, or after a while if it says nothing.
                    let again = match bucket.lagged(None, denied).retry_after() {
                        Some(retry) => retry,
                        None if self.refusals == 0 => Duration::ZERO,
                        None => NEVER_RETRY,
                    };
                    self.refusals += 1;
                    self.retry = Some(Delay::new(again));
                }
            }
        }
    }

    /// Waits `wait` on the timer (made now if there is none), counting the rounds slept.
    fn wait_out(&mut self, wait: Duration, cx: &mut Context<'_>) -> Poll<()> {
        let delay = self.delay.get_or_insert_with(|| Delay::new(wait));
        if Pin::new(delay).poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.delay = None;
        self.rounds += 1;
        Poll::Ready(())
    }

    /// The item was handed on: its tokens stay spent, and a named limiter counts it as an
    /// allowed decision that waited from [`start`](Self::start) until now.
    pub(super) fn hand_on(&mut self) {
        let cost = self.booked.iter().map(|part| part.cost).sum();
        self.count(cost);
        self.reset();
    }

    /// `tokens` more of the current item, all of it booked and there, were handed on (a
    /// writer's inner writer took that many bytes); the item is handed on once all of it is.
    pub(super) fn take(&mut self, tokens: u32) {
        debug_assert!(self.unbooked == 0 && tokens <= self.untaken());
        self.taken += tokens;
        if self.untaken() == 0 {
            self.hand_on();
        }
    }

    /// Tokens of the current item booked and not yet handed on ([`take`](Self::take)).
    pub(super) fn untaken(&self) -> u32 {
        let booked: u32 = self.booked.iter().map(|part| part.cost).sum();
        booked - self.taken
    }

    /// Ends the current item: what of it was handed on ([`take`](Self::take)) stays spent and
    /// is counted; the rest of its bookings is given back, the last part first, so that each
    /// give-back finds its booking on top of the bucket if nothing was booked since. An item
    /// of which nothing was handed on is not counted.
    pub(super) fn finish(&mut self) {
        self.unbooked = 0;
        let taken = self.taken;
        let mut untaken = self.untaken();
        while untaken > 0 {
            let Some(part) = self.booked.pop() else { break };
            let back = part.cost.min(untaken);
            let bucket = self.bucket_as_booked(&part);
            bucket.give_back(&part.receipt, back, None);
            untaken -= back;
        }
        if taken > 0 {
            self.count(taken);
        }
        self.reset();
    }

    /// Counts an item of `cost` tokens handed on, if the limiter is named.
    fn count(&self, cost: u32) {
        let Some(named) = self.limit.named() else {
            return;
        };
        let waited = self
            .limit
            .bucket_ref()
            .now()
            .saturating_duration_since(self.started);
        count_wait(Some(named), cost, true, waited);
    }

    fn reset(&mut self) {
        self.unbooked = 0;
        self.taken = 0;
        self.booked.clear();
        self.delay = None;
        self.retry = None;
        self.rounds = 0;
        self.refusals = 0;
    }

    /// The limit's bucket under the quota `part` was booked with.
    fn bucket_as_booked(&self, part: &Booked) -> BucketRef<'_, dyn Clock + '_> {
        BucketRef {
            quota: part.quota,
            ..self.limit.bucket_ref()
        }
    }

    pub(super) fn now(&self) -> Nanos {
        self.limit.bucket_ref().now()
    }

    /// The most tokens one item may book at once: the limit's burst now.
    pub(super) fn burst(&self) -> u32 {
        self.limit.bucket_ref().quota.burst()
    }
}

impl<L: Deref> Drop for Pacer<L>
where
    L::Target: Limit,
{
    fn drop(&mut self) {
        self.finish();
    }
}
