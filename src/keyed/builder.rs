//! `KeyedLimiterBuilder`: capacity, clock, start state and overflow policy of a keyed limiter.

use super::fingerprint::{FingerprintHash, Fingerprinter};
use super::table::loom_hooks::Faults;
use super::table::memory::{self, AllocError};
use super::table::{huge_pages, Overflow, Table};
use super::{KeyedLimiter, OverflowPolicy};
use crate::clock::tick_clock::TickClock;
use crate::clock::Clock;
use crate::quota::Quota;
use core::fmt;
use core::marker::PhantomData;

/// The default [`KeyedLimiterBuilder::max_keys`]: 2^20 = 1,048,576 keys, 21 MB of address
/// space that becomes resident only as keys arrive.
pub const DEFAULT_MAX_KEYS: usize = 1 << 20;

/// How far from its home a key may be stored: the longest scan of a look-up. At a load of 0.8,
/// linear probing displaces no key among 1,000,000 by more than about 300 slots.
pub(crate) const WINDOW: usize = 512;

/// Builds a [`KeyedLimiter`]; from [`KeyedLimiter::builder`].
///
/// ```
/// use cellrate::{KeyedLimiter, ManualClock, OverflowPolicy, Quota};
///
/// let limiter = KeyedLimiter::<u64>::builder(Quota::per_second(10))
///     .max_keys(10_000)
///     .clock(ManualClock::new())
///     .overflow(OverflowPolicy::DenyNewKeys)
///     .start_empty(true)
///     .build();
/// assert!(limiter.check_key(&7).is_err()); // a new key starts empty
/// ```
#[must_use = "a builder does nothing until .build()"]
pub struct KeyedLimiterBuilder<K, C = TickClock> {
    quota: Quota,
    clock: C,
    max_keys: usize,
    start_empty: bool,
    policy: OverflowPolicy,
    huge_pages: bool,
    hash: FingerprintHash,
    _keys: PhantomData<fn(&K)>,
}

/// Why [`KeyedLimiterBuilder::try_build`] could not build a limiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyedBuildError {
    /// `max_keys(0)`: a limiter that can hold no key.
    ZeroKeys,
    /// The table for this many keys does not fit in the address space.
    TooLarge {
        /// The `max_keys` asked for.
        max_keys: usize,
    },
    /// The allocator could not provide the table.
    OutOfMemory {
        /// The size of the table in bytes.
        bytes: usize,
    },
}

impl fmt::Display for KeyedBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyedBuildError::ZeroKeys => f.write_str("max_keys must be at least 1"),
            KeyedBuildError::TooLarge { max_keys } => {
                write!(
                    f,
                    "max_keys {max_keys} needs a table larger than the address space"
                )
            }
            KeyedBuildError::OutOfMemory { bytes } => {
                write!(
                    f,
                    "could not allocate the {bytes}-byte table of a keyed limiter"
                )
            }
        }
    }
}

impl core::error::Error for KeyedBuildError {}

impl<K> KeyedLimiterBuilder<K, TickClock> {
    pub(super) fn new(quota: Quota) -> Self {
        KeyedLimiterBuilder {
            quota,
            clock: TickClock::new(),
            max_keys: DEFAULT_MAX_KEYS,
            start_empty: false,
            policy: OverflowPolicy::EvictNearestNew,
            huge_pages: false,
            hash: FingerprintHash::AesCmac,
            _keys: PhantomData,
        }
    }
}

impl<K, C: Clock> KeyedLimiterBuilder<K, C> {
    /// The most keys the limiter is sized for (default [`DEFAULT_MAX_KEYS`]): `ceil(n * 5 / 4)`
    /// slots of 16 bytes, 20 bytes per key at `n`; untouched slots cost address space only.
    /// Past about `n` keys, [`OverflowPolicy`] decides.
    pub fn max_keys(self, n: usize) -> Self {
        KeyedLimiterBuilder {
            max_keys: n,
            ..self
        }
    }

    /// The clock to read (default: a new [`TickClock`]). How the limiter reads it is fixed by
    /// the quota it is built with, for every key and every quota of a call
    /// ([`KeyedBucket::with_quota`](crate::KeyedBucket::with_quota)): a [`TickClock`]'s cached
    /// time if that quota is at least 16 ms deep, its exact time if not.
    pub fn clock<C2: Clock>(self, clock: C2) -> KeyedLimiterBuilder<K, C2> {
        KeyedLimiterBuilder {
            quota: self.quota,
            clock,
            max_keys: self.max_keys,
            start_empty: self.start_empty,
            policy: self.policy,
            huge_pages: self.huge_pages,
            hash: self.hash,
            _keys: PhantomData,
        }
    }

    /// With `on`, new keys start empty (full one bucket depth after they are first seen)
    /// instead of full (the default). A check of a new key then records it even when it spends
    /// nothing, and a bucket that is not full is never removed for a new key
    /// ([`OverflowPolicy`]).
    pub fn start_empty(self, on: bool) -> Self {
        KeyedLimiterBuilder {
            start_empty: on,
            ..self
        }
    }

    /// What a new key does when its window has no room (default
    /// [`OverflowPolicy::EvictNearestNew`]).
    pub fn overflow(self, policy: OverflowPolicy) -> Self {
        KeyedLimiterBuilder { policy, ..self }
    }

    /// With `on`, back the table with 2 MiB huge pages where Linux offers them (transparent
    /// huge pages in `madvise` or `always` mode; default `false`): a check of a random key in
    /// a large table then misses the cache but not the TLB (BENCHMARKS.md, the keyed rows).
    ///
    /// The price is resident memory: the kernel commits a whole 2 MiB page at the first touch
    /// of any slot in it, so the table is nearly all resident after a few dozen keys
    /// (BENCHMARKS.md, "Memory"). It does nothing elsewhere than Linux, nor for tables that
    /// hold no whole aligned 2 MiB page (`max_keys` under about 105,000 to 210,000); the
    /// limiter's `Debug` output (`huge_pages: ..`) tells whether the advice was given.
    pub fn huge_pages(self, on: bool) -> Self {
        KeyedLimiterBuilder {
            huge_pages: on,
            ..self
        }
    }

    /// The keyed hash of the fingerprints (default [`FingerprintHash::AesCmac`], which is
    /// SipHash-1-3 on processors without AES-NI). Both are pseudorandom functions under a
    /// secret random key; the limiter's `Debug` output tells which one it uses.
    pub fn fingerprint_hash(self, hash: FingerprintHash) -> Self {
        KeyedLimiterBuilder { hash, ..self }
    }

    /// The limiter.
    ///
    /// # Panics
    /// If `max_keys` is 0 or the table cannot be allocated; [`try_build`](Self::try_build)
    /// returns the error instead.
    pub fn build(self) -> KeyedLimiter<K, C> {
        self.try_build()
            .unwrap_or_else(|e| panic!("KeyedLimiterBuilder::build: {e}"))
    }

    /// The limiter, or why it could not be made (`max_keys(0)`, or no memory for the table).
    pub fn try_build(self) -> Result<KeyedLimiter<K, C>, KeyedBuildError> {
        let slots = slot_count(self.max_keys)?;
        let table = self.allocate(slots)?;
        Ok(KeyedLimiter::from_parts(
            table,
            self.quota,
            self.clock,
            self.start_empty,
            Fingerprinter::new(self.hash),
        ))
    }

    /// A table of `slots` slots, searched [`WINDOW`] slots from home.
    fn allocate(&self, slots: usize) -> Result<Table, KeyedBuildError> {
        let memory = memory::zeroed_slots(slots).map_err(|e| match e {
            AllocError::TooLarge => KeyedBuildError::TooLarge {
                max_keys: self.max_keys,
            },
            AllocError::Failed => KeyedBuildError::OutOfMemory { bytes: slots * 16 },
        })?;
        let advised = self.huge_pages && huge_pages::advise(&memory);
        let overflow = match self.policy {
            OverflowPolicy::EvictNearestNew => Overflow::EvictNearestNew,
            OverflowPolicy::DenyNewKeys => Overflow::DenyNewKeys,
        };
        let mut table = Table::new(memory, WINDOW, overflow, self.start_empty, Faults::NONE);
        table.huge_pages = advised;
        Ok(table)
    }
}

/// `ceil(max_keys * 5 / 4)`: a load of 0.8 at `max_keys`.
fn slot_count(max_keys: usize) -> Result<usize, KeyedBuildError> {
    if max_keys == 0 {
        return Err(KeyedBuildError::ZeroKeys);
    }
    max_keys
        .checked_add(max_keys.div_ceil(4))
        .ok_or(KeyedBuildError::TooLarge { max_keys })
}

impl<K, C: fmt::Debug> fmt::Debug for KeyedLimiterBuilder<K, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedLimiterBuilder")
            .field("quota", &self.quota)
            .field("clock", &self.clock)
            .field("max_keys", &self.max_keys)
            .field("start_empty", &self.start_empty)
            .field("overflow", &self.policy)
            .field("huge_pages", &self.huge_pages)
            .field("fingerprint_hash", &self.hash)
            .finish()
    }
}

#[cfg(all(test, not(loom), target_os = "linux"))]
#[path = "builder_tests.rs"]
mod tests;
