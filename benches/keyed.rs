//! Keyed limiters side by side: cellrate's `KeyedLimiter`, the naive keyed design
//! (`mutex_bucket`: one `Mutex<HashMap<K, MutexBucket>>`, every check locks the map, then the
//! key's bucket) and governor 0.10's default keyed limiter (`RateLimiter::keyed`: DashMap,
//! SipHash, quanta clock), all on their real clocks, keys visited in random order:
//! - `keyed_check_{1000,1000000}_keys`: u64 keys, one thread;
//! - `keyed_check_100000_string_keys`: 16-character `String` keys (cellrate looks up by `&str`);
//! - `keyed_parts`: the fingerprint hash and the clock reads a check is made of;
//! - `keyed_batch`: cellrate's `check_many` (one clock read per batch of 64 keys, and the
//!   slots of the next keys fetched while one is decided) against one `check_key` per key for
//!   cellrate and governor, at 1,000 and 1,000,000 u64 keys, in checks per second;
//! - `keyed_floor`: the physical floor of a check at 1,000,000 keys, one random compare-and-swap
//!   per check over an array the size of cellrate's table, with a 128-bit word per slot (the
//!   layout cellrate had before) or a pair of 64-bit words (as cellrate's slots now, CAS on
//!   one), after each clock read; and with the slot picked by the SipHash of a key, as a check
//!   of `keyed_check_*_keys` picks it (`siphash_then_cas64`, the floor of those rows).
//!
//! Every key exists before timing starts (the hot path of a service: most requests come from a
//! key already seen), and the quota admits everything, so every subject measures look-up +
//! clock + one decision. Each table is built once per group, not per sample. With
//! `--features quanta` cellrate also runs on its TSC clock (`cellrate_quanta`), and
//! `cellrate_at_now` is cellrate with the time passed in (the table alone), and at 1,000,000
//! keys `cellrate_huge_pages` the same with the table in 2 MiB pages; `cellrate_siphash_at_now`
//! is `cellrate_at_now` with SipHash-1-3 fingerprints instead of AES-CMAC. `_cached` subjects
//! run on a clock refreshed every millisecond by a background thread: cellrate's `TickClock`
//! (its cached time, which these quotas read) and governor's `QuantaUpkeepClock`, the same
//! design; `cellrate_instant` runs on
//! `MonotonicClock` (an `Instant` read per check). Threads sharing one table are measured by
//! `paired`, whose chunks prove that the threads overlapped.
//!
//! Run: `cargo bench -p cellrate-benches --features quanta -- keyed_` (about 2 minutes with
//! `-- --warm-up-time 1 --measurement-time 2`). Other work shares the machine, so compare the
//! subjects of one run and read ratios, not absolute figures.

mod batch;
mod floor;
pub mod subjects;

use crate::mutex_bucket::MutexBucket;
use cellrate::{Clock, KeyedLimiter, MonotonicClock, Quota, TickClock};
use criterion::{Bencher, BenchmarkId, Criterion};
use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::hint::black_box;
use std::sync::Mutex;
use subjects::*;

/// The naive keyed limiter: one map of mutex token buckets behind one mutex.
struct MutexMap<K> {
    buckets: Mutex<HashMap<K, MutexBucket>>,
    quota: Quota,
}

impl<K: Hash + Eq> MutexMap<K> {
    /// A map holding every one of `keys`.
    fn holding<Q: Hash + Eq + ToOwned<Owned = K> + ?Sized>(keys: &[&Q]) -> MutexMap<K>
    where
        K: Borrow<Q>,
    {
        let map = MutexMap {
            buckets: Mutex::new(HashMap::with_capacity(keys.len())),
            quota: Quota::per_second(RATE),
        };
        for k in keys {
            assert!(map.check(*k), "a fresh key is allowed");
        }
        map
    }

    /// Locks the map, finds or inserts `key`'s bucket, spends one token of it now.
    fn check<Q: Hash + Eq + ToOwned<Owned = K> + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        let mut buckets = self.buckets.lock().expect("no check panics");
        if let Some(bucket) = buckets.get(key) {
            return bucket.check().is_ok();
        }
        let fresh = MutexBucket::with_clock(self.quota, MonotonicClock::new());
        let bucket = buckets.entry(key.to_owned()).or_insert(fresh);
        bucket.check().is_ok()
    }
}

/// Times one check per iteration, walking `order` round and round.
fn walk<T>(b: &mut Bencher, order: &[T], check: impl Fn(&T) -> bool) {
    let mut i = 0;
    b.iter(|| {
        i = (i + 1) & (order.len() - 1);
        black_box(check(&order[i]))
    })
}

/// One thread, `n` u64 keys, every subject.
fn u64_keys(c: &mut Criterion) {
    for n in [1_000, 1_000_000] {
        let (keys, order) = u64_workload(n, U64_SEED);
        let key_refs: Vec<&u64> = keys.iter().collect();
        let mut group = c.benchmark_group(format!("keyed_check_{n}_keys"));
        let id = |name: &str| BenchmarkId::new(name, n);

        let ours: KeyedLimiter<u64> = cellrate_limiter(&key_refs, TickClock::new());
        group.bench_function(id("cellrate"), |b| {
            walk(b, &order, |k| ours.check_key(k).is_ok())
        });
        // The table alone: the same checks with the time passed in (read once per sample).
        group.bench_function(id("cellrate_at_now"), |b| {
            let now = ours.clock().now();
            walk(b, &order, |k| ours.at(now).key(k).check_n(1).is_ok())
        });
        drop(ours);

        // The same table in 2 MiB pages (`huge_pages(true)`, off by default): only a table of
        // at least one huge page takes them, so only the 1,000,000-key row has this subject.
        let ours: KeyedLimiter<u64> = huge_page_limiter(&key_refs);
        if format!("{ours:?}").contains("huge_pages: true") {
            group.bench_function(id("cellrate_huge_pages"), |b| {
                let now = ours.clock().now();
                walk(b, &order, |k| ours.at(now).key(k).check_n(1).is_ok())
            });
        }
        drop(ours);

        // SipHash-1-3 fingerprints (the hash governor uses) instead of the default AES-CMAC.
        let ours = siphash_limiter(&key_refs);
        group.bench_function(id("cellrate_siphash_at_now"), |b| {
            let now = ours.clock().now();
            walk(b, &order, |k| ours.at(now).key(k).check_n(1).is_ok())
        });
        drop(ours);

        #[cfg(feature = "quanta")]
        {
            let ours: KeyedLimiter<u64, _> =
                cellrate_limiter(&key_refs, cellrate::QuantaClock::new());
            group.bench_function(id("cellrate_quanta"), |b| {
                walk(b, &order, |k| ours.check_key(k).is_ok())
            });
        }

        let ours: KeyedLimiter<u64, _> = cellrate_limiter(&key_refs, MonotonicClock::new());
        group.bench_function(id("cellrate_instant"), |b| {
            walk(b, &order, |k| ours.check_key(k).is_ok())
        });
        drop(ours);

        let ours: KeyedLimiter<u64, _> = cellrate_limiter(&key_refs, cached_clock());
        group.bench_function(id("cellrate_cached"), |b| {
            walk(b, &order, |k| ours.check_key(k).is_ok())
        });
        drop(ours);

        let baseline = MutexMap::holding(&key_refs);
        group.bench_function(id("mutex_bucket"), |b| {
            walk(b, &order, |k| baseline.check(k))
        });
        drop(baseline);

        let theirs = governor_limiter(&keys);
        group.bench_function(id("governor"), |b| {
            walk(b, &order, |k| theirs.check_key(k).is_ok())
        });
        drop(theirs);

        let theirs = governor_cached_limiter(&keys);
        group.bench_function(id("governor_cached"), |b| {
            walk(b, &order, |k| theirs.check_key(k).is_ok())
        });
        group.finish();
    }
}

/// One thread, 100,000 `String` keys: cellrate looks up by `&str`, governor by `&String`.
fn string_keys_one_thread(c: &mut Criterion) {
    const N: usize = 100_000;
    let keys = string_keys(N, 0xD1B5_4A32_D192_ED03);
    let key_refs: Vec<&String> = keys.iter().collect();
    let key_strs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let order = visiting_order(&key_refs, &mut xorshift(0x94D0_49BB_1331_11EB));
    let mut group = c.benchmark_group(format!("keyed_check_{N}_string_keys"));
    let id = |name: &str| BenchmarkId::new(name, N);

    let ours: KeyedLimiter<String> = cellrate_limiter(&key_strs, TickClock::new());
    group.bench_function(id("cellrate"), |b| {
        walk(b, &order, |k| ours.check_key(k.as_str()).is_ok())
    });
    drop(ours);

    let baseline = MutexMap::holding(&key_strs);
    group.bench_function(id("mutex_bucket"), |b| {
        walk(b, &order, |k| baseline.check(k.as_str()))
    });
    drop(baseline);

    let theirs = governor_limiter(&keys);
    group.bench_function(id("governor"), |b| {
        walk(b, &order, |k| theirs.check_key(*k).is_ok())
    });
    group.finish();
}

/// Every group of this suite.
pub fn benches(c: &mut Criterion) {
    u64_keys(c);
    string_keys_one_thread(c);
    batch::batches(c);
    floor::parts(c);
    floor::slot_floors(c);
    floor::hashed_floors(c);
}
