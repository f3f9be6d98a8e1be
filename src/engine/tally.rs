//! Striped counters: a named limiter's decisions and the HTTP layer's answers, a line per
//! thread's lane (why: docs/design.md §11, *Lanes*).

use crate::sync::lane::{AtomicU64, Ordering};
use alloc::boxed::Box;
use alloc::vec::Vec;
use crossbeam_utils::CachePadded;

const MAX_LANES: usize = 64;
/// The fewest lanes [`StripedCounts::new`] gives a tally: a process has a few threads beside
/// its workers (its main thread, a runtime's blocking pool) that count too.
const MIN_LANES: usize = 4;

/// `N` counts striped over cache lines: each thread adds to the line of its own lane, and a
/// read sums the lines, so that threads counting on a hot path do not take turns on one line.
///
/// ```
/// use cellrate::StripedCounts;
///
/// let counts = StripedCounts::<2>::new();
/// counts.add(0);
/// counts.add(1);
/// counts.add(1);
/// assert_eq!(counts.sums(), [1, 2]);
/// ```
#[derive(Debug)]
pub struct StripedCounts<const N: usize> {
    /// Per lane, the counts of the thread that holds it: written by that thread alone.
    lanes: Box<[CachePadded<[AtomicU64; N]>]>,
    /// The counts of the threads with no lane here.
    shared: CachePadded<[AtomicU64; N]>,
}

impl<const N: usize> StripedCounts<N> {
    /// Two lanes per available core, 4 to 64.
    pub fn new() -> StripedCounts<N> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        StripedCounts::with_lanes((2 * cores).max(MIN_LANES))
    }

    /// `n` lanes, 1 to 64: the first `n` threads that count (at a time) add without a locked
    /// instruction, the others by a read-modify-write on one shared line.
    pub(crate) fn with_lanes(n: usize) -> StripedCounts<N> {
        let line = || CachePadded::new(core::array::from_fn(|_| AtomicU64::new(0)));
        let lanes: Vec<_> = (0..n.clamp(1, MAX_LANES)).map(|_| line()).collect();
        StripedCounts {
            lanes: lanes.into_boxed_slice(),
            shared: line(),
        }
    }

    /// Adds one to count `kind`. Panics if `kind` is not below `N`.
    #[inline]
    pub fn add(&self, kind: usize) {
        #[cfg(not(loom))]
        self.add_in(super::lanes::current(), kind);
        // The models hold their lanes by hand (`add_in`).
        #[cfg(loom)]
        self.add_in(usize::MAX, kind);
    }

    /// Adds one to count `kind` as the holder of lane `lane` (`lanes.rs`), which no other
    /// thread may hold meanwhile.
    #[inline]
    pub(crate) fn add_in(&self, lane: usize, kind: usize) {
        match self.lanes.get(lane) {
            // A load and a store rather than a read-modify-write: no other thread writes this
            // lane, so no add comes in between. Relaxed: an independent tally that publishes
            // nothing; the add a new holder reads was ordered before it by the registry's
            // mutex (lanes.rs).
            Some(own) => {
                let count = &own[kind];
                count.store(
                    count.load(Ordering::Relaxed).wrapping_add(1),
                    Ordering::Relaxed,
                );
            }
            // Relaxed: as above; the read-modify-write keeps the adds of the threads that
            // share this line.
            None => {
                self.shared[kind].fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Each count summed over the lines: exact once the calls to [`add`](Self::add) have
    /// returned; one in flight may be missed, none is counted twice.
    pub fn sums(&self) -> [u64; N] {
        // Relaxed: independent tallies; calls in flight may be missed, none is counted twice.
        self.lanes
            .iter()
            .chain(core::iter::once(&self.shared))
            .fold([0; N], |mut sums, line| {
                for (sum, count) in sums.iter_mut().zip(line.iter()) {
                    *sum = sum.wrapping_add(count.load(Ordering::Relaxed));
                }
                sums
            })
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn lane_count(&self) -> usize {
        self.lanes.len()
    }
}

impl<const N: usize> Default for StripedCounts<N> {
    fn default() -> Self {
        StripedCounts::new()
    }
}

/// The counts of a [`Tally`]: which one a decision adds to.
const ALLOWED: usize = 0;
/// See [`ALLOWED`].
const DENIED: usize = 1;
/// See [`ALLOWED`].
const PEEKS: usize = 2;

/// Decisions counted in stripes; totals are exact once the counting calls have returned.
#[derive(Debug)]
pub(crate) struct Tally {
    stripes: StripedCounts<3>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) allowed: u64,
    pub(crate) denied: u64,
    pub(crate) peeks: u64,
}

impl Tally {
    /// A tally with two lanes per available core, 4 to 64.
    pub(crate) fn new() -> Tally {
        Tally {
            stripes: StripedCounts::new(),
        }
    }

    /// A tally with `n` lanes, 1 to 64.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn with_lanes(n: usize) -> Tally {
        Tally {
            stripes: StripedCounts::with_lanes(n),
        }
    }

    /// Counts one decision of a request of `cost` tokens. Out of line: an unnamed limiter's
    /// check keeps only the branch that skips this call.
    #[inline(never)]
    pub(crate) fn record(&self, allowed: bool, cost: u32) {
        self.stripes.add(match (allowed, cost) {
            (true, 0) => PEEKS,
            (true, _) => ALLOWED,
            (false, _) => DENIED,
        });
    }

    pub(crate) fn totals(&self) -> Totals {
        let [allowed, denied, peeks] = self.stripes.sums();
        Totals {
            allowed,
            denied,
            peeks,
        }
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn lane_count(&self) -> usize {
        self.stripes.lane_count()
    }
}

#[cfg(all(test, not(loom)))]
#[path = "tally_tests.rs"]
mod tests;
