//! The keyed table's slot words in the crate's own tests: each operation may first yield the
//! processor, on a thread that turned its pauses on ([`pause_now_and_then`]), one time in 16.
//!
//! A stress test of a few threads on a few processors rarely sees a thread lose its processor
//! between two particular atomic steps; with the pauses on, it does all the time, so races that
//! need two threads to meet inside the steps of an insert, a removal or a write of a TAT are
//! reached within seconds. The table's code knows nothing of it: every step of its protocols is
//! an operation on a slot word, and each one is a place to pause.

use super::{AtomicU64, Ordering};
use std::cell::Cell;

std::thread_local! {
    /// This thread's pause generator (xorshift), or 0 while its pauses are off.
    static PAUSES: Cell<u64> = const { Cell::new(0) };
}

/// Turns the calling thread's pauses on, their pattern drawn from `seed`.
pub(crate) fn pause_now_and_then(seed: u64) {
    PAUSES.with(|p| p.set(seed | 1));
}

/// Yields the processor one time in 16, if this thread's pauses are on: a pause before every
/// operation, where a look-up alone makes several, so rarer than at a few chosen steps would
/// be, which keeps the stress tests' rounds within their time.
fn pause() {
    let mut x = PAUSES.with(Cell::get);
    if x == 0 {
        return;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    PAUSES.with(|p| p.set(x));
    if x % 16 == 0 {
        std::thread::yield_now();
    }
}

/// A slot word that may pause before each operation. The same bits as an `AtomicU64`, so that a
/// zeroed page is a table of EMPTY slots here too.
#[repr(transparent)]
pub(crate) struct SlotWord(AtomicU64);

impl SlotWord {
    #[inline]
    pub(crate) fn load(&self, order: Ordering) -> u64 {
        pause();
        self.0.load(order)
    }

    #[inline]
    pub(crate) fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        pause();
        self.0.compare_exchange(current, new, success, failure)
    }
}
