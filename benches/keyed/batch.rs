//! `keyed_batch`: cellrate's `check_many` against single checks of the same keys.

use super::subjects::{cellrate_limiter, governor_limiter, u64_workload};
use cellrate::{KeyedLimiter, TickClock};
use criterion::{Bencher, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

/// Keys per batch in `keyed_batch`.
const BATCH: usize = 64;

/// Batches of [`BATCH`] keys: cellrate's batch API against single checks of the same keys.
pub fn batches(c: &mut Criterion) {
    let mut group = c.benchmark_group("keyed_batch");
    group.throughput(Throughput::Elements(BATCH as u64));
    for n in [1_000, 1_000_000] {
        let (keys, order) = u64_workload(n, 0x510E_527F_ADE6_82D1);
        let key_refs: Vec<&u64> = keys.iter().collect();
        let id = |name: &str| BenchmarkId::new(name, n);
        let batch_walk = |b: &mut Bencher, check: &mut dyn FnMut(&[u64])| {
            let mut i = 0;
            b.iter(|| {
                i = (i + BATCH) & (order.len() - 1);
                check(&order[i..i + BATCH])
            })
        };

        let ours: KeyedLimiter<u64> = cellrate_limiter(&key_refs, TickClock::new());
        group.bench_function(id("cellrate_batch"), |b| {
            batch_walk(b, &mut |batch| {
                let requests: [(&u64, u32); BATCH] = core::array::from_fn(|i| (&batch[i], 1));
                black_box(ours.check_many(&requests));
            })
        });
        group.bench_function(id("cellrate"), |b| {
            batch_walk(b, &mut |batch| {
                for k in batch {
                    black_box(ours.check_key(k).is_ok());
                }
            })
        });
        drop(ours);

        let theirs = governor_limiter(&keys);
        group.bench_function(id("governor"), |b| {
            batch_walk(b, &mut |batch| {
                for k in batch {
                    black_box(theirs.check_key(k).is_ok());
                }
            })
        });
    }
    group.finish();
}
