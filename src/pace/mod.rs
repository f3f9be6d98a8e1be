//! Pacing streams, sinks and writers through a limiter (feature `async`): each item is handed
//! on once its tokens are there (a writer's bytes at one token a byte), on any executor and
//! with any [`Limit`], borrowed or in an `Arc`.
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
//! Items are booked as [`Reservation`]s are, so a paced stream never goes faster than the quota
//! and a late wake-up is made up for, not added up; an item above the burst is booked a burst
//! at a time. Dropping an adapter, or `into_inner`, gives back what it booked and did not hand
//! on ([`Reservation::cancel`]'s rule). With a named limiter each item handed on counts as an
//! allowed decision. The details: docs/design.md §4, *Pacing*.
//!
//! [`Limit`]: crate::Limit
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
