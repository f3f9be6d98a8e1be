//! The two steps of removing a bucket from one slot (freeze W, then retire K), so that no spend
//! is lost: docs/design.md §6.5; why each CAS of K is preceded by a read of W: §6.7.

use super::slot::{KeyWord, Slot, FROZEN};
use super::window::Slots;

/// Step 1 of a removal: freezes the bucket `(k, w)` of `slot` unless W moved since it was
/// read. The caller counts the removal.
pub(super) fn freeze(slots: &Slots, slot: &Slot, k: KeyWord, w: u64) -> bool {
    if slots.faults.evicts_without_freeze() {
        return true;
    }
    // Comparing the exact W read means a spend that moved the TAT since the read makes this
    // fail: no spend is lost.
    slot.tat.compare_exchange(w, FROZEN ^ slots.mask(k)).is_ok()
}

/// Step 2 of an eviction: K from the frozen bucket's to a TOMBSTONE, if W is still frozen
/// just before. A failure means that someone else did it, or claimed the slot.
pub(super) fn retire(slots: &Slots, slot: &Slot, k: KeyWord) {
    if !still_frozen(slots, slot, k) {
        return;
    }
    let _ = slot.key.compare_exchange(k, k.tombstone());
}

/// Whether W holds FROZEN masked by `k`, read just before a CAS of K from `k`.
pub(super) fn still_frozen(slots: &Slots, slot: &Slot, k: KeyWord) -> bool {
    if slots.faults.evicts_without_freeze() {
        return true;
    }
    slot.tat.load() ^ slots.mask(k) == FROZEN
}
