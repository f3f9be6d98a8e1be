//! `contention`: 1 and 2 threads hammering one shared limiter, on the allowed and denied paths.
//!
//! Each sample starts the threads on a [`Barrier`], lets each make `iters` checks at
//! [`NOW`](super::subjects::NOW), and reports the wall time from the first thread's start to the
//! last one's end; throughput is `threads` elements per iteration. A fixed `now` is monotonic
//! for every thread, and the allowing quota's 4.29e9 spends of depth outlast any sample (the
//! outcomes are asserted after timing).

use super::subjects::{
    count_allowed, CellrateAt, FloorCas, FloorLoad, GovernorFake, MutexAt, Path, Spend,
};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

/// The thread counts measured: this machine has 2 cores.
const THREADS: [usize; 2] = [1, 2];

/// Every limiter, both paths, each thread count, plus the bare atomic floor of each path.
pub fn contention(c: &mut Criterion) {
    let mut group = c.benchmark_group("contention");
    for path in [Path::Allowed, Path::Denied] {
        for threads in THREADS {
            group.throughput(Throughput::Elements(threads as u64));
            bench_threads(&mut group, "cellrate", path, threads, || {
                CellrateAt::new(path)
            });
            bench_threads(&mut group, "mutex_bucket", path, threads, || {
                MutexAt::new(path)
            });
            bench_threads(&mut group, "governor", path, threads, || {
                GovernorFake::new(path)
            });
            match path {
                Path::Allowed => {
                    bench_threads(&mut group, "floor_cas", path, threads, FloorCas::new)
                }
                Path::Denied => {
                    bench_threads(&mut group, "floor_load", path, threads, FloorLoad::new)
                }
            }
        }
    }
    group.finish();
}

/// Benchmarks `threads` threads sharing one fresh subject per sample; asserts (untimed) that
/// every check of every thread took `path`.
fn bench_threads<S: Spend>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    path: Path,
    threads: usize,
    make: impl Fn() -> S,
) {
    let id = BenchmarkId::new(format!("{}/{name}", path.name()), threads);
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let subject = make();
            let (elapsed, allowed) = time_threads(&subject, threads, iters);
            path.assert_outcomes(allowed, iters * threads as u64);
            elapsed
        })
    });
}

/// Runs `iters` checks on each of `threads` threads released together; returns the wall time
/// from the earliest start to the latest end, and the total number of allowed checks.
fn time_threads<S: Spend>(subject: &S, threads: usize, iters: u64) -> (Duration, u64) {
    let (wall, allowed) = on_threads(threads, |_| count_allowed(subject, iters));
    (wall, allowed.into_iter().sum())
}

/// Runs `work(thread index)` on `threads` threads released together (one on this thread);
/// returns the wall time from the earliest start to the latest end, and each one's result.
pub fn on_threads<R: Send>(threads: usize, work: impl Fn(usize) -> R + Sync) -> (Duration, Vec<R>) {
    if threads == 1 {
        let start = Instant::now();
        let result = work(0);
        return (start.elapsed(), vec![result]);
    }
    let barrier = Barrier::new(threads);
    let runs: Vec<(Instant, Instant, R)> = thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, work) = (&barrier, &work);
                scope.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    let result = work(t);
                    (start, Instant::now(), result)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a bench thread panicked"))
            .collect()
    });
    let first_start = runs.iter().map(|r| r.0).min().expect("at least one thread");
    let last_end = runs.iter().map(|r| r.1).max().expect("at least one thread");
    (
        last_end - first_start,
        runs.into_iter().map(|r| r.2).collect(),
    )
}
