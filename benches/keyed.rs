//! Keyed limiters side by side: cellrate's `KeyedLimiter` against governor 0.10's default
//! keyed limiter (`RateLimiter::keyed`: DashMap, SipHash, quanta clock), both on their real
//! clocks, u64 keys visited in random order. Every key exists before timing starts (the hot
//! path of a service: most requests come from a key already seen), and the quota admits
//! everything, so both measure look-up + clock + one decision.
//!
//! Run: `cargo bench --bench keyed` (about 1 minute). Short settings: other work shares the
//! machine, so compare the two in one run and read ratios, not absolute figures.

use cellrate::{KeyedLimiter, Quota};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::hash::BuildHasher;
use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

type Governor = governor::DefaultKeyedRateLimiter<u64>;

/// A rate no benchmark can exhaust, so every check takes the "allowed" path in both crates.
const RATE: u32 = 1_000_000_000;

fn cellrate_limiter(keys: &[u64]) -> KeyedLimiter<u64> {
    let limiter = KeyedLimiter::builder(Quota::per_second(RATE))
        .max_keys(keys.len())
        .build();
    for k in keys {
        limiter.check_key(k).unwrap();
    }
    limiter
}

fn governor_limiter(keys: &[u64]) -> Governor {
    let quota = governor::Quota::per_second(NonZeroU32::new(RATE).unwrap());
    let limiter = governor::RateLimiter::keyed(quota);
    for k in keys {
        limiter.check_key(k).unwrap();
    }
    limiter
}

/// `n` distinct random keys, and a visiting order: a random sequence over them, long enough
/// that it does not sit in cache when `n` is large.
fn workload(n: usize, seed: u64) -> (Vec<u64>, Vec<u64>) {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let keys: Vec<u64> = (0..n).map(|_| next()).collect();
    let order: Vec<u64> = (0..(1 << 20)).map(|_| keys[next() as usize % n]).collect();
    (keys, order)
}

/// Times `iters` checks on each of `threads` threads (a power of two), each walking its own
/// part of `order` (whose length is a power of two).
fn time_threads<F: Fn(&u64) + Sync>(
    threads: usize,
    order: &[u64],
    iters: u64,
    check: F,
) -> Duration {
    let part = order.len() / threads;
    let start = Instant::now();
    std::thread::scope(|s| {
        for mine in order.chunks(part) {
            let check = &check;
            s.spawn(move || {
                for i in 0..iters as usize {
                    check(&mine[i & (part - 1)]);
                }
            });
        }
    });
    start.elapsed()
}

fn one_thread(c: &mut Criterion) {
    for n in [1_000, 1_000_000] {
        let (keys, order) = workload(n, 0x9E37_79B9_7F4A_7C15);
        let mut group = c.benchmark_group(format!("keyed_check_{n}_keys"));
        let ours = cellrate_limiter(&keys);
        group.bench_function(BenchmarkId::new("cellrate", n), |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) & (order.len() - 1);
                black_box(ours.check_key(&order[i]).is_ok())
            })
        });
        // The table alone: the same checks with the time passed in (read once per sample).
        group.bench_function(BenchmarkId::new("cellrate_at_now", n), |b| {
            let now = cellrate::Clock::now(ours.clock());
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) & (order.len() - 1);
                black_box(ours.check_key_n_at(&order[i], 1, now).is_ok())
            })
        });
        drop(ours);
        let theirs = governor_limiter(&keys);
        group.bench_function(BenchmarkId::new("governor", n), |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) & (order.len() - 1);
                black_box(theirs.check_key(&order[i]).is_ok())
            })
        });
        group.finish();
    }
}

fn two_threads(c: &mut Criterion) {
    let (keys, order) = workload(1_000_000, 0x2545_F491_4F6C_DD1D);
    let mut group = c.benchmark_group("keyed_throughput_1000000_keys");
    let ours = Arc::new(cellrate_limiter(&keys));
    for threads in [1, 2] {
        group.bench_function(BenchmarkId::new("cellrate_threads", threads), |b| {
            b.iter_custom(|iters| {
                time_threads(threads, &order, iters, |k| {
                    black_box(ours.check_key(k).is_ok());
                })
            })
        });
    }
    drop(ours);
    let theirs = governor_limiter(&keys);
    for threads in [1, 2] {
        group.bench_function(BenchmarkId::new("governor_threads", threads), |b| {
            b.iter_custom(|iters| {
                time_threads(threads, &order, iters, |k| {
                    black_box(theirs.check_key(k).is_ok());
                })
            })
        });
    }
    group.finish();
}

/// The parts of a check: the fingerprint (SipHash-1-3 under a random key) and the clocks.
fn parts(c: &mut Criterion) {
    let mut group = c.benchmark_group("keyed_parts");
    let hasher = std::collections::hash_map::RandomState::new();
    let mut k = 0u64;
    group.bench_function("siphash13_u64", |b| {
        b.iter(|| {
            k = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
            black_box(hasher.hash_one(k))
        })
    });
    let clock = cellrate::MonotonicClock::new();
    group.bench_function("monotonic_clock_now", |b| {
        b.iter(|| black_box(cellrate::Clock::now(&clock)))
    });
    let quanta = governor::clock::QuantaClock::default();
    group.bench_function("governor_quanta_clock_now", |b| {
        b.iter(|| black_box(governor::clock::Clock::now(&quanta)))
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = one_thread, two_threads, parts
}
criterion_main!(benches);
