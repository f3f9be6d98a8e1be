//! `keyed_parts` and `keyed_floor`: what a keyed check is made of, and the floor beneath it.

use super::subjects::{cached_clock, u64_workload, xorshift, SipCasFloor, ORDER_LEN, U64_SEED};
use super::walk;
use cellrate::{Clock, MonotonicClock, Nanos};
use criterion::{BenchmarkId, Criterion};
use std::hash::BuildHasher;
use std::hint::black_box;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

/// The parts of a check: the fingerprint (SipHash-1-3 under a random key) and the clocks
/// (`MonotonicClock`, and governor's default clock, a quanta TSC read).
pub fn parts(c: &mut Criterion) {
    let mut group = c.benchmark_group("keyed_parts");
    let hasher = std::collections::hash_map::RandomState::new();
    let mut k = 0u64;
    group.bench_function("siphash13_u64", |b| {
        b.iter(|| {
            k = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
            black_box(hasher.hash_one(k))
        })
    });
    let clock = MonotonicClock::new();
    group.bench_function("monotonic_clock_now", |b| b.iter(|| black_box(clock.now())));
    let quanta = governor::clock::QuantaClock::default();
    group.bench_function("quanta_clock_now", |b| {
        b.iter(|| black_box(governor::clock::Clock::now(&quanta)))
    });
    group.finish();
}

/// The floor of a check at 1,000,000 keys: per check, one clock read, then a load and a CAS of
/// a random slot of a 1,250,000-slot array (cellrate's table size for 1,000,000 keys, 20 MB),
/// with no hashing and no search. `slot_cas128`: 16-byte words, as cellrate's slots were (a
/// `lock cmpxchg16b`); `slot_cas64`: the same array as pairs of 8-byte words, CAS on one, as
/// cellrate's slots are now.
pub fn slot_floors(c: &mut Criterion) {
    const SLOTS: usize = 1_250_000;
    let mut next = xorshift(0x6A09_E667_F3BC_C909);
    let order: Vec<usize> = (0..ORDER_LEN).map(|_| next() as usize % SLOTS).collect();
    let wide: Vec<portable_atomic::AtomicU128> = (0..SLOTS)
        .map(|_| portable_atomic::AtomicU128::new(0))
        .collect();
    let narrow: Vec<AtomicU64> = (0..2 * SLOTS).map(|_| AtomicU64::new(0)).collect();
    // Relaxed everywhere: a floor (on x86_64 every ordering of a CAS is the same instruction).
    let cas128 = |j: usize, now: u64| {
        let word = wide[j].load(Relaxed);
        let new = word.wrapping_add(u128::from(now) | 1);
        wide[j]
            .compare_exchange(word, new, Relaxed, Relaxed)
            .is_ok()
    };
    let cas64 = |j: usize, now: u64| {
        let word = &narrow[2 * j + 1];
        let old = word.load(Relaxed);
        word.compare_exchange(old, old.wrapping_add(now | 1), Relaxed, Relaxed)
            .is_ok()
    };
    const TICK: Nanos = Nanos::new(1_000_000);
    let monotonic = MonotonicClock::new();
    let cached = cached_clock();
    let mut group = c.benchmark_group("keyed_floor");
    for (clock, read) in [
        ("time_passed_in", &(|| 1u64) as &dyn Fn() -> u64),
        ("instant", &|| monotonic.now().as_u64()),
        // TickClock's `now` is exact: a limiter reads the cached time through `now_within`,
        // with a tolerance of at least a tick.
        ("cached_clock", &|| cached.now_within(TICK).as_u64()),
    ] {
        group.bench_function(format!("slot_cas128/{clock}"), |b| {
            walk(b, &order, |&j| cas128(j, read()))
        });
        group.bench_function(format!("slot_cas64/{clock}"), |b| {
            walk(b, &order, |&j| cas64(j, read()))
        });
    }
    group.finish();
}

/// The floor of a check of a key by its SipHash fingerprint, at 1,000 and 1,000,000 u64 keys
/// (the keys and visiting order of `keyed_check_*_keys`): per check, SipHash-1-3 of the key
/// under a random key (the hash cellrate and governor both use by default), the slot it picks
/// in an array of `keys * 5 / 4` pairs of 8-byte words (cellrate's table), then a load and a
/// CAS of one word of it. No tag, no search, no decision, time passed in. At 1,000,000 keys
/// the slot's address depends on the hash, so each check waits for its cache miss; without
/// the hash (`slot_cas64/time_passed_in`) the misses of successive checks overlap.
pub fn hashed_floors(c: &mut Criterion) {
    let mut group = c.benchmark_group("keyed_floor");
    for n in [1_000, 1_000_000] {
        let (_, order) = u64_workload(n, U64_SEED);
        let floor = SipCasFloor::new(n);
        group.bench_function(BenchmarkId::new("siphash_then_cas64", n), |b| {
            walk(b, &order, |k| floor.check(k))
        });
    }
    group.finish();
}
