//! Removing a bucket, which freezes W before K is retired so that no spend is lost. The
//! removals themselves (idle eviction, overflow eviction) are in [`Table`](super::Table) and
//! [`claim`](super::claim); these are their steps on one slot.
//!
//! # Removing a bucket
//! 1. **Freeze**: CAS W from the exact value read (in the bucket's tenure) to the masked
//!    FROZEN. It fails if any spend moved W since the read, so a bucket found idle is removed
//!    only while still idle: a spend that lands first makes the freeze fail, and a spend that
//!    comes after it finds FROZEN and looks the key up again.
//! 2. **Retire K**: CAS K to a TOMBSTONE (eviction) or to a new claim (an insert taking the
//!    slot). Anyone who meets a frozen bucket may do this step; until then the slot counts as
//!    free for claims and as absent for look-ups.
//!
//! # A stalled thread
//! A CAS of K compares K alone, and K repeats after 2^25 claims of one slot (the generation is
//! 25 bits: more than a second of the fastest churn). So each CAS of K that matters is preceded
//! by a read of W that shows the state it expects: still frozen under that K before step 2
//! (and before an insert claims a frozen bucket), still UNPUBLISHED before a claim is made
//! LIVE. A thread that stalls before that read finds the slot's current state, however many
//! claims happened meanwhile. What a thread preempted between such a read and its CAS, for as
//! long as the slot takes to come back to the same K, can still do (all to that one key), how
//! `evict_idle` removes a bucket made LIVE on a TAT no operation wrote, and why a 128-bit CAS of
//! K and W is not used to rule it out, are in docs/design.md (6.7).

use super::slot::{KeyWord, Slot, FROZEN};
use super::window::Slots;

/// Step 1 of a removal (module docs): freezes the bucket `(k, w)` of `slot` unless W moved
/// since it was read. The caller counts the removal.
pub(super) fn freeze(slots: &Slots, slot: &Slot, k: KeyWord, w: u64) -> bool {
    if slots.faults.evicts_without_freeze() {
        return true;
    }
    // Comparing the exact W read means a spend that moved the TAT since the read makes this
    // fail: no spend is lost.
    slot.tat.compare_exchange(w, FROZEN ^ slots.mask(k)).is_ok()
}

/// Step 2 of an eviction (module docs): K from the frozen bucket's to a TOMBSTONE, if W is
/// still frozen just before (see *A stalled thread* in the module docs). A failure means
/// that someone else did it, or claimed the slot.
pub(super) fn retire(slots: &Slots, slot: &Slot, k: KeyWord) {
    if !still_frozen(slots, slot, k) {
        return;
    }
    let _ = slot.key.compare_exchange(k, k.tombstone());
}

/// Whether W holds FROZEN masked by `k`, read just before a CAS of K from `k` (module
/// docs, *A stalled thread*).
pub(super) fn still_frozen(slots: &Slots, slot: &Slot, k: KeyWord) -> bool {
    if slots.faults.evicts_without_freeze() {
        return true;
    }
    slot.tat.load() ^ slots.mask(k) == FROZEN
}
