//! The subjects and workloads of the keyed benchmarks, shared by `keyed` (criterion) and
//! `keyed_paired`: the limiters, each holding every key before timing starts, and the keys and
//! their random visiting order.

use cellrate::{Clock, FingerprintHash, KeyedLimiter, Quota, TickClock};
use std::borrow::Borrow;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::hash::Hash;
use std::num::NonZeroU32;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// A rate no benchmark can exhaust, so every check takes the "allowed" path in every subject.
pub const RATE: u32 = 1_000_000_000;

/// Length of every visiting order: a power of two, long enough that it does not sit in cache.
pub const ORDER_LEN: usize = 1 << 20;

/// cellrate's keyed limiter on `clock`, sized for `keys` and holding every one of them.
pub fn cellrate_limiter<K, Q, C>(keys: &[&Q], clock: C) -> KeyedLimiter<K, C>
where
    K: Hash + Eq + Borrow<Q>,
    Q: Hash + ?Sized,
    C: Clock,
{
    let builder = KeyedLimiter::builder(Quota::per_second(RATE)).max_keys(keys.len());
    holding(builder.clock(clock).build(), keys)
}

/// `KeyedLimiter::new`, what a user gets by default (a table sized for
/// [`DEFAULT_MAX_KEYS`](cellrate::DEFAULT_MAX_KEYS) keys on `TickClock`), holding every one of
/// `keys`. Unlike [`cellrate_limiter`]'s table, sized for exactly `keys` (80% full, so that 40%
/// of keys lie past their home slot), it holds 1,000 keys each at its home slot.
pub fn default_limiter(keys: &[&u64]) -> KeyedLimiter<u64> {
    holding(KeyedLimiter::new(Quota::per_second(RATE)), keys)
}

/// [`cellrate_limiter`] with its table advised to huge pages.
pub fn huge_page_limiter(keys: &[&u64]) -> KeyedLimiter<u64> {
    let builder = KeyedLimiter::builder(Quota::per_second(RATE)).max_keys(keys.len());
    holding(builder.huge_pages(true).build(), keys)
}

/// [`cellrate_limiter`] with SipHash-1-3 fingerprints instead of the default AES-CMAC.
pub fn siphash_limiter(keys: &[&u64]) -> KeyedLimiter<u64> {
    let builder = KeyedLimiter::builder(Quota::per_second(RATE)).max_keys(keys.len());
    holding(
        builder.fingerprint_hash(FingerprintHash::SipHash13).build(),
        keys,
    )
}

/// `limiter` after a first check of every one of `keys`.
fn holding<K, Q, C>(limiter: KeyedLimiter<K, C>, keys: &[&Q]) -> KeyedLimiter<K, C>
where
    K: Hash + Eq + Borrow<Q>,
    Q: Hash + ?Sized,
    C: Clock,
{
    for k in keys {
        limiter.check_key(*k).expect("a fresh key is allowed");
    }
    limiter
}

/// governor's default keyed limiter holding every one of `keys`.
pub fn governor_limiter<K: Hash + Eq + Clone>(keys: &[K]) -> governor::DefaultKeyedRateLimiter<K> {
    let quota = governor::Quota::per_second(NonZeroU32::new(RATE).expect("RATE > 0"));
    let limiter = governor::RateLimiter::keyed(quota);
    for k in keys {
        limiter.check_key(k).expect("a fresh key is allowed");
    }
    limiter
}

/// [`governor_limiter`] with governor's snapshot middleware, whose allowed checks return the
/// state that tower_governor's headers read (`remaining_burst_capacity`).
pub fn governor_read_limiter<K: Hash + Eq + Clone>(
    keys: &[K],
) -> governor::RateLimiter<
    K,
    governor::state::keyed::DefaultKeyedStateStore<K>,
    governor::clock::DefaultClock,
    governor::middleware::StateInformationMiddleware,
> {
    let quota = governor::Quota::per_second(NonZeroU32::new(RATE).expect("RATE > 0"));
    let limiter = governor::RateLimiter::keyed(quota).with_middleware();
    for k in keys {
        limiter.check_key(k).expect("a fresh key is allowed");
    }
    limiter
}

/// How often the `_cached` clocks are refreshed.
pub const CACHED_RESOLUTION: Duration = Duration::from_millis(1);

/// cellrate's clock refreshed by a background thread every tick: `TickClock`, whose cached time
/// every limiter built with a quota at least 16 ticks deep reads, as all of the benchmarks'
/// are. (It also adds its declared lag, two ticks, to a refusal's `retry_after`.)
pub fn cached_clock() -> TickClock {
    assert_eq!(
        TickClock::TICK,
        CACHED_RESOLUTION,
        "the clocks compared tick alike"
    );
    TickClock::new()
}

/// governor's upkeep clock, refreshed every [`CACHED_RESOLUTION`]. quanta runs one upkeep
/// thread per process (a second start fails), so every limiter on it shares this one.
pub fn governor_upkeep_clock() -> governor::clock::QuantaUpkeepClock {
    static CLOCK: std::sync::OnceLock<governor::clock::QuantaUpkeepClock> =
        std::sync::OnceLock::new();
    let clock = CLOCK.get_or_init(|| {
        governor::clock::QuantaUpkeepClock::from_interval(CACHED_RESOLUTION)
            .expect("quanta's upkeep thread starts")
    });
    clock.clone()
}

/// governor's keyed limiter (DashMap, SipHash) on its upkeep clock, holding every one of
/// `keys`.
pub fn governor_cached_limiter<K: Hash + Eq + Clone>(
    keys: &[K],
) -> governor::RateLimiter<
    K,
    governor::state::keyed::DashMapStateStore<K>,
    governor::clock::QuantaUpkeepClock,
> {
    let quota = governor::Quota::per_second(NonZeroU32::new(RATE).expect("RATE > 0"));
    let limiter = governor::RateLimiter::dashmap_with_clock(quota, governor_upkeep_clock());
    for k in keys {
        limiter.check_key(k).expect("a fresh key is allowed");
    }
    limiter
}

/// An xorshift64 generator: distinct outputs until its period (2^64 - 1), so keys drawn from
/// it are distinct.
pub fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// A random sequence of [`ORDER_LEN`] visits over `keys`.
pub fn visiting_order<T: Copy>(keys: &[T], next: &mut impl FnMut() -> u64) -> Vec<T> {
    (0..ORDER_LEN)
        .map(|_| keys[next() as usize % keys.len()])
        .collect()
}

/// The seed of the u64 keys and visiting order of `keyed_check_*_keys` (and of the floor beneath
/// them).
pub const U64_SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// `n` distinct random u64 keys, and a random visiting order over them.
pub fn u64_workload(n: usize, seed: u64) -> (Vec<u64>, Vec<u64>) {
    let mut next = xorshift(seed);
    let keys: Vec<u64> = (0..n).map(|_| next()).collect();
    let order = visiting_order(&keys, &mut next);
    (keys, order)
}

/// `n` distinct random 16-character keys (16 hex digits of distinct xorshift outputs).
pub fn string_keys(n: usize, seed: u64) -> Vec<String> {
    let mut next = xorshift(seed);
    (0..n).map(|_| format!("{:016x}", next())).collect()
}

/// The floor of a check of a u64 key by its SipHash fingerprint (`keyed_floor`,
/// `siphash_then_cas64`): SipHash-1-3 of the key under a random key (the hash cellrate and
/// governor both use by default), the slot it picks in an array of `keys * 5 / 4` pairs of
/// 8-byte words (cellrate's table), then a load and a CAS of one word of it. No tag, no
/// search, no decision.
pub struct SipCasFloor {
    hasher: RandomState,
    words: Vec<AtomicU64>,
}

impl SipCasFloor {
    /// The array for `keys` keys.
    pub fn new(keys: usize) -> SipCasFloor {
        SipCasFloor::with_slots(keys * 5 / 4)
    }

    /// The array of the table of `KeyedLimiter::new` ([`DEFAULT_MAX_KEYS`] keys), whatever
    /// the number of keys: the floor beneath the headline keyed rows.
    pub fn for_default_table() -> SipCasFloor {
        SipCasFloor::with_slots(cellrate::DEFAULT_MAX_KEYS * 5 / 4)
    }

    fn with_slots(slots: usize) -> SipCasFloor {
        SipCasFloor {
            hasher: RandomState::new(),
            words: (0..2 * slots).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// One "check" of `key`.
    #[inline]
    pub fn check(&self, key: &u64) -> bool {
        let slots = self.words.len() / 2;
        let fp = self.hasher.hash_one(key);
        let j = ((u128::from(fp) * slots as u128) >> 64) as usize;
        let word = &self.words[2 * j + 1];
        // Relaxed: a floor (on x86_64 every ordering of a CAS is the same instruction).
        let mut old = word.load(Relaxed);
        // A loop, as a check's is: two threads can meet on one slot.
        while let Err(actual) = word.compare_exchange(old, old.wrapping_add(1), Relaxed, Relaxed) {
            old = actual;
        }
        true
    }
}
