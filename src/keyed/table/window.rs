//! A key's window as an iterator: its slots in probing order with their window positions, as
//! at most two straight runs of the slot array, with no wrap-around test per slot.

use super::slot::Slot;
use core::iter::{Chain, Enumerate};
use core::slice;

/// The slots of a window in order, each with its position `i` in the window (the slot
/// [`Table::at`](super::Table::at)`(home, i)`): first the run from home to the end of
/// the window or of the array, then the run wrapped to the array's start. Internal iteration
/// (`find_map`, `try_fold`) over it compiles to one straight loop per run; a `for` loop tests
/// which run it is in at each step, which is fine off the hot path.
pub(super) type Window<'a> = Enumerate<Chain<slice::Iter<'a, Slot>, slice::Iter<'a, Slot>>>;

/// The window of `len` slots of `slots` from `home` on, wrapping at the end (`home <
/// slots.len()`, `len <= slots.len()`).
#[inline(always)]
pub(super) fn window(slots: &[Slot], home: usize, len: usize) -> Window<'_> {
    let (before, from_home) = slots.split_at(home);
    let (run, wrapped) = match len.checked_sub(from_home.len()) {
        Some(rest) => (from_home, &before[..rest]),
        None => (&from_home[..len], &[][..]),
    };
    run.iter().chain(wrapped).enumerate()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::window;
    use crate::keyed::table::slot::{zeroed_slots, Slot};

    /// Every window of every small table visits slot `(home + i) % n` at position `i`.
    #[test]
    fn visits_the_window_in_probing_order() {
        for n in 1..=6 {
            let slots = zeroed_slots(n).unwrap();
            for home in 0..n {
                for len in 0..=n {
                    let seen: Vec<(usize, *const Slot)> = window(&slots, home, len)
                        .map(|(i, slot)| (i, slot as *const _))
                        .collect();
                    let expected: Vec<(usize, *const Slot)> = (0..len)
                        .map(|i| (i, &slots[(home + i) % n] as *const _))
                        .collect();
                    assert_eq!(seen, expected, "n {n}, home {home}, len {len}");
                }
            }
        }
    }
}
