//! Striped counters: a named limiter's decisions (what `stats()` and the metrics read) and the
//! HTTP layer's answers.
//!
//! One shared atomic add per check would make every thread checking a hot limiter take turns
//! on the counter's cache line, as they already do on the bucket's word, doubling the line's
//! traffic. Here each thread adds to its own stripe instead: a cache-padded line chosen by a
//! per-thread index, given out round-robin, so threads share a stripe only when there are
//! more of them than stripes. The cost is one thread-local read and one uncontended atomic
//! add per counted check, and `stripes x 128` bytes per named limiter or layer (read: the sum of the
//! stripes, a loop over a few lines, taken only by `stats()` and the metrics export).

use crate::sync::counter::{AtomicU64, AtomicUsize, Ordering};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cell::Cell;
use crossbeam_utils::CachePadded;

/// The most stripes a tally has: enough for as many threads as a machine has cores, up to 64.
const MAX_STRIPES: usize = 64;

/// `N` counts striped over cache lines: each thread adds to the stripe of its own index, and
/// a read sums the stripes. What a named limiter counts its decisions in, public for the
/// counters of crates built on this one (the HTTP layer's answers): counting on a hot path
/// without every thread taking turns on one cache line.
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
    stripes: Box<[CachePadded<[AtomicU64; N]>]>,
}

impl<const N: usize> StripedCounts<N> {
    /// One stripe per available core, rounded up to a power of two (at most 64).
    pub fn new() -> StripedCounts<N> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        StripedCounts::with_stripes(cores)
    }

    /// `n` stripes, rounded up to a power of two in `1..=64`.
    pub fn with_stripes(n: usize) -> StripedCounts<N> {
        let n = n.clamp(1, MAX_STRIPES).next_power_of_two();
        let stripes: Vec<_> = (0..n)
            .map(|_| CachePadded::new(core::array::from_fn(|_| AtomicU64::new(0))))
            .collect();
        StripedCounts {
            stripes: stripes.into_boxed_slice(),
        }
    }

    /// Adds one to count `kind`. Panics if `kind` is not below `N`.
    #[inline]
    pub fn add(&self, kind: usize) {
        let stripe = &self.stripes[thread_index() & (self.stripes.len() - 1)];
        // Relaxed: an independent tally that publishes nothing; the sum is read alone.
        stripe[kind].fetch_add(1, Ordering::Relaxed);
    }

    /// Each count summed over the stripes: exact once the calls to [`add`](Self::add) have
    /// returned; one in flight may be missed, none is counted twice.
    pub fn sums(&self) -> [u64; N] {
        // Relaxed: independent tallies; calls in flight may be missed, none is counted twice.
        self.stripes.iter().fold([0; N], |mut sums, stripe| {
            for (sum, count) in sums.iter_mut().zip(stripe.iter()) {
                *sum += count.load(Ordering::Relaxed);
            }
            sums
        })
    }

    /// How many stripes there are.
    #[cfg(test)]
    pub(crate) fn stripe_count(&self) -> usize {
        self.stripes.len()
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

/// The summed counts of a [`Tally`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) allowed: u64,
    pub(crate) denied: u64,
    pub(crate) peeks: u64,
}

impl Tally {
    /// A tally with one stripe per available core, rounded up to a power of two (at most 64).
    pub(crate) fn new() -> Tally {
        Tally {
            stripes: StripedCounts::new(),
        }
    }

    /// A tally with `n` stripes, rounded up to a power of two in `1..=64`.
    #[cfg(test)]
    pub(crate) fn with_stripes(n: usize) -> Tally {
        Tally {
            stripes: StripedCounts::with_stripes(n),
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

    /// The sums over the stripes.
    pub(crate) fn totals(&self) -> Totals {
        let [allowed, denied, peeks] = self.stripes.sums();
        Totals {
            allowed,
            denied,
            peeks,
        }
    }

    /// How many stripes this tally has.
    #[cfg(test)]
    pub(crate) fn stripe_count(&self) -> usize {
        self.stripes.stripe_count()
    }
}

/// The calling thread's stripe index: given out round-robin at its first counted check.
#[inline]
fn thread_index() -> usize {
    std::thread_local! {
        // Const-initialised and without a destructor, so that reading it is one load with no
        // lazy-initialisation check; `usize::MAX` means not given out yet.
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    INDEX.with(|i| match i.get() {
        usize::MAX => {
            let given = next_index();
            i.set(given);
            given
        }
        given => given,
    })
}

/// The next stripe index, for a thread counting for the first time.
#[cold]
fn next_index() -> usize {
    /// The next index to give out.
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    // Relaxed: only uniqueness matters, and fetch_add gives it in any ordering. The mask
    // keeps it off `usize::MAX`.
    NEXT.fetch_add(1, Ordering::Relaxed) & (MAX_STRIPES - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripes_are_a_bounded_power_of_two() {
        assert_eq!(Tally::with_stripes(0).stripe_count(), 1);
        assert_eq!(Tally::with_stripes(3).stripe_count(), 4);
        assert_eq!(Tally::with_stripes(1000).stripe_count(), 64);
    }

    #[test]
    fn totals_are_exact_under_threads() {
        // More threads than stripes, so that some share a stripe.
        let tally = Tally::with_stripes(2);
        std::thread::scope(|s| {
            for t in 0..6u32 {
                let tally = &tally;
                s.spawn(move || {
                    for i in 0..10_000u32 {
                        tally.record(i % 3 != 0, t % 2);
                    }
                });
            }
        });
        let t = tally.totals();
        // Each thread: 3,334 denials (i % 3 == 0) and 6,666 admissions, peeks when cost is 0.
        assert_eq!(t.denied, 6 * 3_334);
        assert_eq!(t.peeks, 3 * 6_666);
        assert_eq!(t.allowed, 3 * 6_666);
    }
}
