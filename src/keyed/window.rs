//! A key's window as an iterator: its slots in probing order with their window positions, as
//! at most two straight runs of the slot array, with no wrap-around test per slot.

use crate::sync::AtomicU128;
use core::slice;

/// The slots of a window in order, each with its position `i` in the window: first the run
/// from home to the end of the window or of the array, then the run wrapped to the array's
/// start. Position `i` is the slot [`Table::at`](super::table::Table::at)`(home, i)`.
pub(super) struct Window<'a> {
    /// The run being visited.
    run: slice::Iter<'a, AtomicU128>,
    /// The wrapped run, visited after `run` (empty when the window does not wrap).
    wrapped: &'a [AtomicU128],
    /// The window position of the next slot.
    i: usize,
}

impl<'a> Window<'a> {
    /// The `len` slots of `slots` from `home` on, wrapping at the end (`home < slots.len()`,
    /// `len <= slots.len()`).
    #[inline(always)]
    pub(super) fn new(slots: &'a [AtomicU128], home: usize, len: usize) -> Window<'a> {
        let (before, from_home) = slots.split_at(home);
        let (run, wrapped) = match len.checked_sub(from_home.len()) {
            Some(rest) => (from_home, &before[..rest]),
            None => (&from_home[..len], &[][..]),
        };
        Window {
            run: run.iter(),
            wrapped,
            i: 0,
        }
    }
}

impl<'a> Iterator for Window<'a> {
    type Item = (usize, &'a AtomicU128);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let slot = match self.run.next() {
            Some(slot) => slot,
            None => {
                self.run = core::mem::take(&mut self.wrapped).iter();
                self.run.next()?
            }
        };
        let i = self.i;
        self.i += 1;
        Some((i, slot))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Window;
    use crate::sync::AtomicU128;

    /// Every window of every small table visits slot `(home + i) % n` at position `i`.
    #[test]
    fn visits_the_window_in_probing_order() {
        for n in 1..=6 {
            let slots: Vec<AtomicU128> = (0..n).map(|_| AtomicU128::new(0)).collect();
            for home in 0..n {
                for len in 0..=n {
                    let seen: Vec<(usize, *const AtomicU128)> = Window::new(&slots, home, len)
                        .map(|(i, slot)| (i, slot as *const _))
                        .collect();
                    let expected: Vec<(usize, *const AtomicU128)> = (0..len)
                        .map(|i| (i, &slots[(home + i) % n] as *const _))
                        .collect();
                    assert_eq!(seen, expected, "n {n}, home {home}, len {len}");
                }
            }
        }
    }
}
