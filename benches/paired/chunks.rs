//! The chunks of the paired suites: a subject's checks on its threads, in batches between two
//! readings of the clock, for one chunk's length (see [`overlap`](crate::overlap)).

use super::row::{chunk_length, Subject};
use crate::core::subjects::{count_allowed, Path, Spend};
use crate::overlap::run_batches;
use std::hint::black_box;

/// Checks per batch of a single limiter's chunk (a few µs).
const SPENDS_PER_BATCH: u64 = 1024;

/// Keyed checks per batch (tens of µs at 1,000,000 keys).
const WALKS_PER_BATCH: u64 = 256;

/// `subject`'s checks on `threads` threads, each asserting that every check took `path`.
pub(crate) fn spends<'a, S: Spend>(
    name: &'static str,
    subject: &'a S,
    path: Path,
    threads: usize,
) -> Subject<'a> {
    let chunk = Box::new(move || {
        run_batches(threads, chunk_length(threads), SPENDS_PER_BATCH, |_, _| {
            let allowed = count_allowed(subject, SPENDS_PER_BATCH);
            path.assert_outcomes(allowed, SPENDS_PER_BATCH);
        })
    });
    Subject {
        name,
        threads,
        chunk,
        sleeps: false,
    }
}

/// Keyed tables up to this many keys fit in the caches: a chunk on one is preceded by an
/// untimed pass of [`WARM_VISITS`] visits per key, so that it starts as warm as it ends (another
/// row's chunk just ran over a table that does not fit).
const CACHED_KEYS: usize = 100_000;

/// Untimed visits per key before a chunk on a table that fits in the caches.
const WARM_VISITS: usize = 4;

/// Keyed checks of `keys` keys on `threads` threads, each walking its own part of `order` (a
/// power of two long), from a place that moves on chunk by chunk, each check allowed.
pub(crate) fn walks<'a>(
    name: &'static str,
    order: &'a [u64],
    keys: usize,
    threads: usize,
    check: impl Fn(&u64) -> bool + Sync + 'a,
) -> Subject<'a> {
    assert!(order.len().is_power_of_two());
    let (mask, stride) = (order.len() - 1, order.len() / threads);
    let warm = if keys <= CACHED_KEYS {
        WARM_VISITS * keys
    } else {
        0
    };
    let mut at = 0usize;
    let chunk = Box::new(move || {
        for j in at..at + warm {
            black_box(check(black_box(&order[j & mask])));
        }
        let base = at;
        let run = run_batches(threads, chunk_length(threads), WALKS_PER_BATCH, |t, i| {
            let from = base + t * stride + (i * WALKS_PER_BATCH) as usize;
            let mut allowed = 0u64;
            for j in from..from + WALKS_PER_BATCH as usize {
                allowed += u64::from(check(black_box(&order[j & mask])));
            }
            assert_eq!(allowed, WALKS_PER_BATCH, "a keyed check was denied");
        });
        let furthest = run.threads.iter().map(|t| t.ops).max().unwrap_or(0);
        at = at.wrapping_add(furthest as usize);
        run
    });
    Subject {
        name,
        threads,
        chunk,
        sleeps: false,
    }
}
