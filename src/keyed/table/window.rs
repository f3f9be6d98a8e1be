//! The slot array and a key's place in it: its home slot, and its window as at most two
//! straight runs of the array, with no wrap-around test per slot.

use super::loom_hooks::Faults;
use super::memory::SlotArray;
use super::slot::{KeyWord, Slot, FROZEN};
use core::iter::{Chain, Enumerate};
use core::slice;

/// Slots per cache line (64 bytes of 16-byte slots).
#[cfg(not(loom))]
pub(super) const LINE: usize = 4;
/// Under loom one "line" of two slots (see [`lookup`](super::lookup)).
#[cfg(loom)]
pub(super) const LINE: usize = 2;

/// The slots of a window in order, each with its position `i` (the slot
/// [`Slots::at`]`(home, i)`): the run from home on, then the run wrapped to the array's start.
/// Internal iteration (`find_map`, `try_fold`) compiles to one straight loop per run.
pub(super) type Window<'a> = Enumerate<Chain<slice::Iter<'a, Slot>, slice::Iter<'a, Slot>>>;

/// The slot array with its window length and the placement of slot 0 in its cache line.
pub(crate) struct Slots {
    pub(super) slots: SlotArray,
    /// Where slot 0 sits in its cache line, in slots (the array is 16-byte aligned).
    pub(super) line_phase: usize,
    /// How far from its home a key may be stored: the longest scan.
    pub(super) window: usize,
    /// The loom twins' broken step (none outside loom).
    pub(super) faults: Faults,
}

impl Slots {
    /// `slots` (at least 1) searched `window` slots from home.
    pub(super) fn new(slots: SlotArray, window: usize, faults: Faults) -> Slots {
        let window = window.clamp(1, slots.len());
        // Under loom the slots are not memory words: phase 0, so that the two-slot models take
        // the grouped path of a look-up from slot 0.
        let line_phase = if cfg!(loom) {
            0
        } else {
            (slots.as_ptr() as usize / core::mem::size_of::<Slot>()) % LINE
        };
        Slots {
            slots,
            line_phase,
            window,
            faults,
        }
    }

    /// Places slot 0 at `phase` slots into its cache line, as an allocation could: for the
    /// look-up test, which covers every phase.
    #[cfg(all(test, not(loom)))]
    pub(super) fn set_line_phase(&mut self, phase: usize) {
        self.line_phase = phase % LINE;
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[Slot] {
        &self.slots
    }

    /// The home index of a fingerprint: its high bits scaled onto the slot count
    /// (multiply-shift, so the count need not be a power of two).
    #[inline]
    pub(super) fn home(&self, fp: u64) -> usize {
        ((u128::from(fp) * self.slots.len() as u128) >> 64) as usize
    }

    /// The slots of the window of `home` with their window positions, in probing order.
    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    pub(super) fn window(&self, home: usize) -> Window<'_> {
        window(&self.slots, home, self.window)
    }

    /// The slot at window position `i` from `home`, wrapping at the end of the array.
    #[inline]
    pub(super) fn at(&self, home: usize, i: usize) -> &Slot {
        let j = home + i;
        let j = if j >= self.slots.len() {
            j - self.slots.len()
        } else {
            j
        };
        &self.slots[j]
    }

    /// The mask of W in the tenure of the LIVE K `k` (see [`slot`](super::slot)).
    #[inline]
    pub(super) fn mask(&self, k: KeyWord) -> u64 {
        if self.faults.unmasked_tat() {
            return 0;
        }
        k.mask()
    }

    /// W read in the tenure of the LIVE K `k`, if the slot still holds `k` after the read
    /// and its bucket is not being removed. `None` for a PENDING `k`.
    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    pub(super) fn read_live(&self, slot: &Slot, k: KeyWord) -> Option<u64> {
        slot.read_in_tenure(k)
            .filter(|&w| w ^ self.mask(k) != FROZEN)
    }
}

/// The window of `len` slots of `slots` from `home` on, wrapping at the end (`home <
/// slots.len()`, `len <= slots.len()`).
#[inline(always)] // BENCHMARKS.md, "Keyed, paired"
pub(super) fn window(slots: &[Slot], home: usize, len: usize) -> Window<'_> {
    let (before, from_home) = slots.split_at(home);
    let (run, wrapped) = match len.checked_sub(from_home.len()) {
        Some(rest) => (from_home, &before[..rest]),
        None => (&from_home[..len], &[][..]),
    };
    run.iter().chain(wrapped).enumerate()
}

#[cfg(all(test, not(loom)))]
#[path = "window_tests.rs"]
mod tests;
