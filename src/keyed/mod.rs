//! `KeyedLimiter`: one GCRA bucket per key in a fixed, lock-free table (docs/design.md §6).

#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
mod aes_cmac;
mod at;
mod batch;
mod builder;
mod fingerprint;
#[cfg(all(test, not(loom)))]
mod flood_stress_tests;
mod key_bucket;
mod observe;
// The tests' replay oracle, for the table's stress tests.
#[cfg(all(test, not(loom)))]
#[path = "../../tests/oracle/mod.rs"]
mod oracle;
mod stats;
#[cfg(all(test, not(loom)))]
mod stress_tests;
mod table;

pub use builder::{KeyedBuildError, KeyedLimiterBuilder, DEFAULT_MAX_KEYS};
pub use fingerprint::FingerprintHash;
pub use key_bucket::KeyedBucket;

use crate::at::At;
use crate::clock::tick_clock::TickClock;
use crate::clock::{Clock, Reading};
use crate::engine::counting::Named;
use crate::nanos::Nanos;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;
use core::borrow::Borrow;
use core::fmt;
use core::hash::Hash;
use core::marker::PhantomData;
use fingerprint::Fingerprinter;
use table::{Request, Table};

/// What a new key does when no slot of its window is free and no bucket in it is idle.
///
/// A key removed for a new one comes back as a new key: full where new keys start full, which
/// costs it nothing. Under [`start_empty`](crate::KeyedLimiterBuilder::start_empty) it would
/// come back empty, so there no bucket that is not full is removed for a new key, whatever the
/// policy: a new key that finds no room is refused as under [`DenyNewKeys`](Self::DenyNewKeys),
/// with the time until room comes ([`Denied::retry_after`]; a new key's
/// [`wait`](crate::KeyedBucket::wait) waits for it). What a flood of new keys costs and buys
/// under each policy: docs/design.md §6.5.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OverflowPolicy {
    /// Remove the bucket nearest to full (smallest TAT) and give its slot to the new key,
    /// counted in [`KeyedStats::overflow_evictions`](crate::KeyedStats::overflow_evictions).
    /// Under `start_empty` it acts as [`DenyNewKeys`](Self::DenyNewKeys); otherwise it denies
    /// only a new key whose window holds nothing but inserts in progress.
    #[default]
    EvictNearestNew,
    /// Deny the new key, with a `retry_after` of the time until the bucket nearest to full in
    /// its window is full, counted in
    /// [`KeyedStats::overflow_denials`](crate::KeyedStats::overflow_denials). Never forgets a
    /// key that is not full, so a flood of new keys cannot reset anyone's bucket.
    DenyNewKeys,
}

/// A rate limiter with one GCRA bucket per key, for limits per user, per API key, per IP.
///
/// ```
/// use cellrate::{KeyedLimiter, Quota};
///
/// let limiter = KeyedLimiter::<String>::new(Quota::per_second(5));
/// for _ in 0..5 {
///     assert!(limiter.check_key("alice").is_ok()); // a &str looks up a String key
/// }
/// assert!(limiter.check_key("alice").is_err());
/// assert!(limiter.check_key("bob").is_ok()); // keys are independent
/// ```
///
/// # Guarantees
/// - **No lock** on any check, for a known key or a new one: a hash, a scan of a few 16-byte
///   slots and compare-and-swaps of 8-byte words; a preempted insert delays no one.
/// - **Per-key decisions** are exactly those of [`Limiter`](crate::Limiter). A peek or a
///   denied check of an absent key stores nothing when new keys start full.
/// - **Bounded memory**: the table (`max_keys * 1.25` slots of 16 bytes, resident only where
///   touched) is allocated once when built and never grows; a check allocates nothing.
/// - **Idle keys** (full buckets) carry no information: [`evict_idle`](Self::evict_idle)
///   removes them, and a new key may take an idle key's slot, with no change to what the key
///   is later answered. With neither a free slot nor an idle key, [`OverflowPolicy`] applies.
/// - **Fingerprints**: a key is stored as a 64-bit fingerprint of a pseudorandom function
///   under a secret key per limiter ([`FingerprintHash`]), so clients cannot choose keys that
///   collide; a given key shares a bucket with another with probability at most
///   `511 x 2^-37 = 3.7e-9` (stricter for both, never looser).
///
/// The table's protocol and its proofs: docs/design.md §6, model-checked with loom.
pub struct KeyedLimiter<K, C = TickClock> {
    table: Table,
    quota: Quota,
    clock: C,
    /// How every operation reads `clock`: fixed when the limiter is built.
    reading: Reading,
    start_empty: bool,
    fingerprinter: Fingerprinter,
    /// Set by [`KeyedLimiter::named`]: the opt-in to counting decisions (observe.rs).
    named: Option<Box<Named>>,
    _keys: PhantomData<fn(&K)>,
}

impl<K: Hash + Eq> KeyedLimiter<K, TickClock> {
    /// A limiter of [`DEFAULT_MAX_KEYS`] keys, each starting full, on a new [`TickClock`]:
    /// exact for quotas shallower than 16 ms, in steps of 1 ms above (see [`TickClock`]).
    pub fn new(quota: Quota) -> KeyedLimiter<K, TickClock> {
        KeyedLimiter::builder(quota).build()
    }

    /// A builder to set the capacity, clock, start state and overflow policy.
    pub fn builder(quota: Quota) -> KeyedLimiterBuilder<K, TickClock> {
        KeyedLimiterBuilder::new(quota)
    }
}

impl<K, C> KeyedLimiter<K, C> {
    fn from_parts(
        table: Table,
        quota: Quota,
        clock: C,
        start_empty: bool,
        fingerprinter: Fingerprinter,
    ) -> Self {
        KeyedLimiter {
            table,
            quota,
            clock,
            reading: Reading::for_quota(&quota),
            start_empty,
            fingerprinter,
            named: None,
            _keys: PhantomData,
        }
    }
}

impl<K: Hash + Eq, C: Clock> KeyedLimiter<K, C> {
    /// Spends one token of `key`'s bucket now if there is one. A cost of more than one token,
    /// a reservation or a wait go through the key's handle: `limiter.key(&k).check_n(3)`.
    #[inline]
    pub fn check_key<Q>(&self, key: &Q) -> Result<Allowed, Denied>
    where
        K: Borrow<Q>,
        Q: Hash + ?Sized,
    {
        self.key(key).check_n(1)
    }

    /// This limiter at a time passed in, so that one clock reading can serve many checks:
    /// `limiter.at(now).check_key(&k)`, `limiter.at(now).key(&k).check_n(3)`; see [`At`].
    #[inline]
    pub fn at(&self, now: Nanos) -> At<'_, Self> {
        At::new(self, now)
    }

    /// Removes every key whose bucket is full now (by the reading its checks use); returns how
    /// many. One lock-free pass: it blocks no check, and a check racing it loses no spend.
    pub fn evict_idle(&self) -> usize {
        self.evict_idle_at(self.reading.now(&self.clock))
    }

    pub(crate) fn evict_idle_at(&self, now: Nanos) -> usize {
        let removed = self.table.evict_idle(now.as_u64());
        self.table.counters.count_idle_evictions(removed);
        removed
    }

    /// Keys held: exact when no insert or removal is in progress.
    pub fn len(&self) -> usize {
        self.table.counters.live()
    }

    /// Whether no key is held (as [`len`](Self::len) counts).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots in the table (`max_keys * 1.25`, rounded up).
    pub fn capacity(&self) -> usize {
        self.table.slot_count()
    }

    /// The quota of this limiter: the one of [`check_key`](Self::check_key) and
    /// [`key`](Self::key), fixed when it was built.
    #[inline]
    pub fn quota(&self) -> Quota {
        self.quota
    }

    /// The clock this limiter reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    #[inline]
    pub(crate) fn fingerprint<Q: Hash + ?Sized>(&self, key: &Q) -> u64 {
        self.fingerprinter.fingerprint(key)
    }

    /// A check of `cost` tokens of the bucket of `fp` at `now` under the limiter's quota.
    #[inline]
    pub(crate) fn request(&self, fp: u64, cost: u32, now: u64) -> Request<'_> {
        Request {
            fp,
            now,
            cost,
            quota: &self.quota,
            start_empty: self.start_empty,
            max_wait_ns: 0,
            force: false,
        }
    }

    #[inline]
    pub(crate) fn reading(&self) -> Reading {
        self.reading
    }
}

impl<K, C: fmt::Debug> fmt::Debug for KeyedLimiter<K, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedLimiter")
            .field("quota", &self.quota)
            .field("clock", &self.clock)
            .field("start_empty", &self.start_empty)
            .field("capacity", &self.table.slot_count())
            .field("huge_pages", &self.table.huge_pages)
            .field("fingerprint_hash", &self.fingerprinter.kind())
            .field("name", &self.named.as_deref().map(|n| &n.name))
            .finish_non_exhaustive()
    }
}
