//! Pacing streams, sinks and writers through a limiter (feature `async`).
//!
//! A paced stream hands on each item of the stream it wraps once the item's tokens are there;
//! a paced sink forwards each item once its tokens are there; a paced writer passes bytes on
//! as fast as the limiter's quota allows, one token per byte. They work on any executor (the
//! timer is futures-timer's) and with any [`Limit`]: a [`Limiter`],
//! or one key of a keyed limiter, borrowed or in an `Arc`.
//!
//! ```
//! use cellrate::pace::PaceExt;
//! use cellrate::{Limiter, Quota};
//! use futures::{executor::block_on, stream, StreamExt};
//!
//! let limiter = Limiter::new(Quota::per_second(1_000).with_burst(10));
//! // Chunks of bytes, each costing its length: at most 1,000 bytes a second, 10 at once.
//! let chunks = stream::iter(vec![vec![0u8; 4], vec![0u8; 6], vec![0u8; 25]]);
//! let paced = chunks.paced_by(&limiter, |chunk| chunk.len() as u32);
//! let sizes: Vec<usize> = block_on(paced.map(|c| c.len()).collect());
//! assert_eq!(sizes, [4, 6, 25]);
//! ```
//!
//! # What is exact
//! Every item books its tokens with one compare-and-swap, as a [`Reservation`] does, and waits
//! for the time the booking says, so a paced stream never goes faster than the quota and keeps
//! pace with other users of the same limiter: a late wake-up is made up for, not added up.
//! An item that costs more than the burst is booked a burst at a time, each part once the one
//! before it is there; it is handed on when its last part is. A zero-cost item passes at once. A writer hands on
//! the bytes of one booking over as many inner writes as its inner writer needs, all within
//! [`WRITE_HOLD`] of the first.
//!
//! # Dropping
//! Dropping a paced stream, sink or writer, or turning it back into what it wraps
//! (`into_inner`), gives back what it booked and did not hand on, under the rule of
//! [`Reservation::cancel`]: the tokens of an item it waits for, of an item whose tokens are
//! there but whose inner sink or writer was not ready, and the bytes of a writer's booking
//! that its inner writer did not take. `into_inner` returns the item held, if any.
//!
//! # Refusals
//! A booking refused (a keyed limiter with no room for a new key) is made again once the
//! refusal's `retry_after` has passed, on a timer that wakes the adapter's task.
//!
//! # Counting
//! With a named limiter ([`Limiter::named`]) every item handed on counts as one allowed
//! decision of its cost (a writer: of the bytes its inner writer took), with the time it
//! waited from being taken up to being handed on; an item given back counts nothing.
//!
//! [`Limit`]: crate::Limit
//! [`Limiter`]: crate::Limiter
//! [`Limiter::named`]: crate::Limiter::named
//! [`Reservation`]: crate::Reservation
//! [`Reservation::cancel`]: crate::Reservation::cancel

mod pacer;
mod sink;
mod stream;
mod write;

pub use sink::PacedSink;
pub use stream::Paced;
pub use write::{PacedWrite, WRITE_HOLD};

use crate::all_of::Limit;
use core::ops::Deref;

/// The cost function of [`PaceExt::paced`]: one token an item.
pub type OneEach<T> = fn(&T) -> u32;

/// Adapters that pace a [`Stream`](futures_core::Stream), a [`Sink`](futures_sink::Sink) or an
/// [`AsyncWrite`](futures_io::AsyncWrite) through a limit. `L` is a reference to the limit or a
/// smart pointer to it (`&Limiter`, `Arc<Limiter>`, `&KeyedBucket`).
pub trait PaceExt: Sized {
    /// A stream that hands on each item once one token is there for it.
    fn paced<L>(self, limit: L) -> Paced<Self, L, OneEach<Self::Item>>
    where
        Self: futures_core::Stream,
        L: Deref,
        L::Target: Limit,
    {
        Paced::new(self, limit, |_| 1)
    }

    /// A stream that hands on each item once `cost(&item)` tokens are there for it (its size
    /// in bytes, say).
    fn paced_by<L, F>(self, limit: L, cost: F) -> Paced<Self, L, F>
    where
        Self: futures_core::Stream,
        L: Deref,
        L::Target: Limit,
        F: FnMut(&Self::Item) -> u32,
    {
        Paced::new(self, limit, cost)
    }

    /// A sink that forwards each item once `cost(&item)` tokens are there for it.
    fn paced_sink_by<L, F, Item>(self, limit: L, cost: F) -> PacedSink<Self, L, F, Item>
    where
        Self: futures_sink::Sink<Item>,
        L: Deref,
        L::Target: Limit,
        F: FnMut(&Item) -> u32,
    {
        PacedSink::new(self, limit, cost)
    }

    /// A writer that passes bytes on at most as fast as the limit's quota, one token a byte.
    fn paced_write<L>(self, limit: L) -> PacedWrite<Self, L>
    where
        Self: futures_io::AsyncWrite,
        L: Deref,
        L::Target: Limit,
    {
        PacedWrite::new(self, limit)
    }
}

impl<T> PaceExt for T {}
