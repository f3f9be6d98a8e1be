//! `KeyedLimiter`: one GCRA bucket per key in a fixed, lock-free table.
//!
//! See [`KeyedLimiter`] for the guarantees and [`table`] for the protocol.

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
/// A key removed for a new one loses its history: when it is next seen it is a new key again.
/// Where new keys start full, that costs it nothing: it comes back full. In a limiter built
/// with [`start_empty`](crate::KeyedLimiterBuilder::start_empty) it would come back empty,
/// losing the tokens it held (or, in debt, be let off what it owed), so there no bucket that
/// is not full is ever removed for a new key, whatever the policy: a new key that finds no
/// room is refused as under [`DenyNewKeys`](Self::DenyNewKeys). (A key removed because it was
/// idle loses nothing: it was full, and it comes back full, also under `start_empty`.)
///
/// # What a flood of new keys can do
/// A key's window is chosen by a secret pseudorandom function, so a flood cannot aim at one:
/// to leave a new key no room it must fill about every free slot of the table, and keep them
/// filled. A key of the flood holds its slot until its bucket is full again: one emission
/// interval per token it spent, and under `start_empty` at least one depth (burst times
/// interval) from when it was first seen, more if it books ahead. That takes about as many
/// new keys per interval (under `start_empty`, per depth) as the table has free slots: under
/// `start_empty`, at the default `max_keys` (1,310,720 slots) and 10 a second with a burst of
/// 10 (a depth of 1 s), 1.3 million new keys a second, less the keys held. While it lasts:
/// - under `EvictNearestNew` in a limiter whose keys start full, new keys are admitted and
///   the keys removed for them come back full: the flood refills buckets (the attacker's own
///   too), and empties none;
/// - under `DenyNewKeys`, and under either policy with `start_empty`, new keys are refused,
///   each with the time until room comes ([`Denied::retry_after`]); a new key's
///   [`wait`](crate::KeyedBucket::wait) waits for it; no key the table holds loses a token.
///
/// Under `start_empty` a key removed while full is remembered through at least as many later
/// removals of full buckets as the table has slots, and at most twice as many (docs/design.md,
/// 6.5): a flood of 2.6 million new keys at the default `max_keys`, each stored and later
/// removed full, makes every key absent all through it come back empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OverflowPolicy {
    /// Remove the bucket nearest to full (smallest TAT) and give its slot to the new key: the
    /// key whose reset changes least. It comes back full, so a reset never costs a key tokens.
    /// Counted in [`KeyedStats::overflow_evictions`](crate::KeyedStats::overflow_evictions).
    /// Never denies a request for lack of room (but for one whose window holds only inserts
    /// in progress). Under `start_empty` no bucket that is not full is removed, so this is
    /// [`DenyNewKeys`](Self::DenyNewKeys) there.
    #[default]
    EvictNearestNew,
    /// Deny the new key, with a `retry_after` of the time until the bucket nearest to full in
    /// the window is full (and so free): counted in
    /// [`KeyedStats::overflow_denials`](crate::KeyedStats::overflow_denials). Never forgets a key that is
    /// not full, so a flood of new keys cannot reset anyone's bucket.
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
/// - **No lock** on any check, for a known key or a new one: a check is a hash, a scan of a few
///   16-byte slots, and compare-and-swaps of 8-byte words (see *Design* below), lock-free on
///   every target with 64-bit compare-and-swap.
/// - **Per-key decisions** are exactly those of [`Limiter`](crate::Limiter): the same
///   arithmetic on the key's TAT. A peek (`cost == 0`) or a denied check of an absent key
///   stores nothing when new keys start full.
/// - **Bounded memory**: the table is allocated once at [`builder`](Self::builder) time
///   (`max_keys * 1.25` slots of 16 bytes, a mapping of its own whose pages become resident only when
///   touched) and never grows, so there is no migration step. Nothing is allocated on a check.
/// - **Idle keys** (full buckets, `TAT <= now`) carry no information: [`evict_idle`]
///   removes them, and a new key may take an idle key's slot. A key removed while idle
///   behaves afterwards (at any `now` no earlier than the removal's) exactly as if it had
///   been kept. When a new key finds no free slot and no idle key in its window, the
///   [`OverflowPolicy`] applies and is counted in [`stats`](Self::stats).
/// - **Fingerprints**: a key is stored as a 64-bit fingerprint, not as itself: the first 64
///   bits of a pseudorandom function of the bytes its `Hash` writes, under a random key chosen
///   per limiter (AES-128-CMAC on x86_64 with AES-NI, else SipHash-1-3; see
///   [`FingerprintHash`]). Its high bits choose the home slot and its low 38 bits (the tag)
///   are kept. Two distinct keys share a bucket only if their tags are equal and one lies in
///   the other's window: a given key collides with probability at most
///   `511 x 2^-37 = 3.7e-9` at any load (docs/design.md, *Fingerprints and collisions*), and since
///   the key of the function is secret, clients cannot choose colliding keys.
///
/// # Design
/// The table is a fixed array of slots, each two 64-bit words: K (the key's tag, a generation
/// and a PENDING bit) and W (the TAT masked by K). A spend reads K, W and K again, then moves
/// the TAT with one 8-byte compare-and-swap of W; a key lives within 512 slots of its home
/// (linear probing). A new key is claimed, checked against other claims of it, made LIVE and
/// published in steps that any check meeting them completes itself, so a preempted inserter
/// delays no one. The protocol and its proofs are in docs/design.md; it is model-checked with
/// loom (`src/keyed/table/loom_tests.rs`).
///
/// [`evict_idle`]: Self::evict_idle
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
    /// Assembles a limiter from a built table.
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

    /// Removes every key whose bucket is full now; returns how many. One pass over the table
    /// with compare-and-swaps: it blocks no check, and a check racing it loses no spend. "Now"
    /// is the limiter's own reading, the one its checks use; a check on a reading earlier than
    /// a removal's finds a removed key as in debt until that reading (docs/design.md, 6.5).
    pub fn evict_idle(&self) -> usize {
        self.evict_idle_at(self.reading.now(&self.clock))
    }

    /// [`evict_idle`](Self::evict_idle) at `now`.
    pub(crate) fn evict_idle_at(&self, now: Nanos) -> usize {
        let removed = self.table.evict_idle(now.as_u64());
        self.table.counters.count_idle_evictions(removed);
        removed
    }

    /// Keys held. A relaxed counter: exact when no insert or removal is in progress, and off
    /// by at most the number in progress otherwise.
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

    /// How this limiter reads its clock.
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
