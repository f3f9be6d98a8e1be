//! Hooks for the table's own tests, compiled only into them: an action run between the two
//! reads of a look-up, and pauses at the steps of the protocols, where a thread yields its
//! processor now and then so that other threads run in the middle of its step. Outside the
//! tests each hook is an empty function.
//!
//! A stress test of a few threads on a few processors rarely sees a thread lose its processor
//! between two particular atomic steps; with the pauses on, it does all the time, so races
//! that need two threads to meet inside such steps are reached within seconds.

use super::slot::Slot;

#[cfg(all(test, not(loom)))]
mod hooks {
    use super::Slot;
    use std::cell::Cell;

    std::thread_local! {
        /// What this thread's next look-up does to the slot it is reading, between its read of
        /// W and its second read of K.
        static BETWEEN_READS: Cell<Option<fn(&Slot)>> = const { Cell::new(None) };
        /// This thread's pause generator (xorshift), or 0 while its pauses are off.
        static PAUSES: Cell<u64> = const { Cell::new(0) };
    }

    pub(crate) fn between_reads(slot: &Slot) {
        if let Some(act) = BETWEEN_READS.with(Cell::take) {
            act(slot);
        }
        pause();
    }

    pub(crate) fn pause() {
        let mut x = PAUSES.with(Cell::get);
        if x == 0 {
            return;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        PAUSES.with(|p| p.set(x));
        if x % 4 == 0 {
            std::thread::yield_now();
        }
    }

    pub(crate) fn pause_now_and_then(seed: u64) {
        PAUSES.with(|p| p.set(seed | 1));
    }
}

#[cfg(all(test, not(loom)))]
pub(crate) use hooks::pause_now_and_then;

/// Between a look-up's read of W and its second read of K: runs, once, the action that
/// `once_between_reads` set on this thread, as another thread could at that moment, then
/// maybe pauses.
#[inline]
pub(super) fn between_reads(_slot: &Slot) {
    #[cfg(all(test, not(loom)))]
    hooks::between_reads(_slot);
}

/// At a step of a protocol: maybe yields the processor, if `pause_now_and_then` turned this
/// thread's pauses on (one time in four).
#[inline]
pub(super) fn pause() {
    #[cfg(all(test, not(loom)))]
    hooks::pause();
}
