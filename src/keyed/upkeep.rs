//! Work on buckets outside a check: reading a key's TAT, rewriting it (refunds, undos), and
//! removing buckets, which freezes W before K is retired so that no spend is lost.
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
//! A CAS of K compares K alone, and K repeats after 4,096 claims of one slot (the generation
//! is 12 bits). Step 2 is therefore taken only if W, read just before it, is still frozen under
//! that K: a thread that stalls before the read finds the slot's current state, whatever
//! happened meanwhile. What remains is a thread stalled between that read and the CAS of K
//! (two instructions apart) while the slot goes through a multiple of 4,096 claims and ends
//! LIVE again for the same key at the same generation: then a live bucket of that key would be
//! retired without a freeze, and its spends forgotten (the key restarts full). Making a claim
//! LIVE (see [`claim`](super::claim)) has the same two-instruction window. Both need thousands
//! of evictions and re-inserts of one key in one slot during those two instructions.

use super::slot::{self, Slot, FROZEN, UNPUBLISHED};
#[cfg(loom)]
use super::table::Broken;
use super::table::Table;
use crate::sync::Ordering;

impl Table {
    /// The TAT of the bucket of `fp`, if it has a published one. Creates and helps nothing.
    pub(crate) fn tat_of(&self, fp: u64) -> Option<u64> {
        let (_, k, w) = self.lookup(self.home(fp), slot::tag_of(fp))?;
        let tat = w ^ self.mask(k);
        (tat != UNPUBLISHED).then_some(tat)
    }

    /// Rewrites the TAT of the published bucket of `fp` to `f(TAT)` (`None`: leave it), by a
    /// CAS of W retried with the TAT it finds: a bucket that was removed or whose slot went to
    /// another key is never touched, and an absent key is left alone. Returns whether a write
    /// happened.
    pub(crate) fn rewrite(&self, fp: u64, mut f: impl FnMut(u64) -> Option<u64>) -> bool {
        let home = self.home(fp);
        while let Some((i, k, mut w)) = self.lookup(home, slot::tag_of(fp)) {
            let slot = self.at(home, i);
            let mask = self.mask(k);
            loop {
                let tat = w ^ mask;
                if tat == FROZEN {
                    break; // being removed: look up again
                }
                if tat == UNPUBLISHED {
                    return false; // not yet published: as an absent key
                }
                let Some(new) = f(tat).filter(|&new| new < FROZEN && new != tat) else {
                    return false;
                };
                // As a spend's CAS (see `table`): Release on success, Acquire on failure.
                match slot
                    .tat
                    .compare_exchange(w, new ^ mask, Ordering::Release, Ordering::Acquire)
                {
                    Ok(_) => return true,
                    // SeqCst: a read of the protocol (see `table`).
                    Err(actual) if slot.key.load(Ordering::SeqCst) == k => w = actual,
                    Err(_) => break, // removed or reused meanwhile: look up again
                }
            }
        }
        false
    }

    /// Removes every bucket that is full at `now` (`TAT <= now`); returns how many.
    pub(crate) fn evict_idle(&self, now: u64) -> usize {
        let mut removed = 0;
        for slot in self.slots.iter() {
            // SeqCst: a read of the protocol (see `table`).
            let k = slot.key.load(Ordering::SeqCst);
            if !slot::holds_key(k) {
                continue;
            }
            let Some(w) = self.read_live_or_frozen(slot, k) else {
                continue;
            };
            let tat = w ^ self.mask(k);
            if tat == FROZEN {
                self.retire(slot, k); // a removal that stopped after its first step
            } else if tat <= now && self.freeze(slot, k, w) {
                self.retire(slot, k);
                removed += 1;
            }
        }
        removed
    }

    /// W of the LIVE K `k` read in its tenure (frozen or not), if the slot still holds `k`.
    fn read_live_or_frozen(&self, slot: &Slot, k: u64) -> Option<u64> {
        if slot::is_pending(k) {
            return None;
        }
        // SeqCst, both: reads of the protocol (see `table`).
        let w = slot.tat.load(Ordering::SeqCst);
        (slot.key.load(Ordering::SeqCst) == k).then_some(w)
    }

    /// Step 1 of a removal (module docs): freezes the bucket `(k, w)` unless W moved since it
    /// was read. Counts the removal.
    pub(super) fn freeze(&self, slot: &Slot, k: u64, w: u64) -> bool {
        #[cfg(loom)]
        if self.broken == Broken::EvictWithoutFreeze {
            self.counters.key_removed();
            return true;
        }
        // SeqCst: a write of the protocol (see `table`). Comparing the exact W read means a
        // spend that moved the TAT since the read makes this fail: no spend is lost.
        let frozen = slot
            .tat
            .compare_exchange(
                w,
                FROZEN ^ self.mask(k),
                Ordering::SeqCst,
                Ordering::Relaxed,
            )
            .is_ok();
        if frozen {
            self.counters.key_removed();
        }
        frozen
    }

    /// Step 2 of an eviction (module docs): K from the frozen bucket's to a TOMBSTONE, if W is
    /// still frozen just before (see *A stalled thread* in the module docs). A failure means
    /// that someone else did it, or claimed the slot.
    pub(super) fn retire(&self, slot: &Slot, k: u64) {
        if !self.still_frozen(slot, k) {
            return;
        }
        // SeqCst: a write of K (see `table`).
        let _ =
            slot.key
                .compare_exchange(k, slot::tombstone(k), Ordering::SeqCst, Ordering::Relaxed);
    }

    /// Whether W holds FROZEN masked by `k`, read just before a CAS of K from `k` (module
    /// docs, *A stalled thread*).
    pub(super) fn still_frozen(&self, slot: &Slot, k: u64) -> bool {
        #[cfg(loom)]
        if self.broken == Broken::EvictWithoutFreeze {
            return true;
        }
        // SeqCst: a read of the protocol (see `table`).
        slot.tat.load(Ordering::SeqCst) ^ self.mask(k) == FROZEN
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::request::Request;
    use super::super::slot::{self, zeroed_slots};
    use super::super::OverflowPolicy;
    use super::*;
    use crate::Quota;
    use core::time::Duration;

    /// A thread that froze Y's bucket and stalled before retiring K wakes after the slot went
    /// through 4,096 claims (Y and Z evicting each other), with Y LIVE again under the same K
    /// and a spend in it. Its retire must leave that live bucket alone.
    #[test]
    fn a_stale_retire_after_the_generation_wraps_leaves_a_live_bucket_alone() {
        let quota = Quota::try_new(Duration::from_secs(1), 2).unwrap();
        let table = Table::new(
            zeroed_slots(1).unwrap(),
            1,
            OverflowPolicy::EvictNearestFull,
        );
        let spend = |fp| {
            let req = Request {
                fp,
                now: 0,
                cost: 1,
                quota: &quota,
                start_empty: false,
                max_wait_ns: 0,
            };
            table.spend(&req).is_ok()
        };
        let (y, z) = (0x1234_5678_9abc_def0_u64, 0x0fed_cba9_8765_4321_u64);
        assert!(spend(y));
        let s = &table.slots[0];
        let (k0, w0) = (s.key.load(Ordering::SeqCst), s.tat.load(Ordering::SeqCst));
        assert!(table.freeze(s, k0, w0)); // the stalled eviction froze Y, did not retire it
        for _ in 0..2048 {
            assert!(spend(z));
            assert!(spend(y));
        }
        assert_eq!(
            s.key.load(Ordering::SeqCst),
            k0,
            "Y is LIVE again under the same K"
        );
        table.retire(s, k0); // the stalled thread wakes
        assert!(
            slot::holds_key(s.key.load(Ordering::SeqCst)),
            "Y's live bucket was retired without a freeze"
        );
        assert_eq!(table.tat_of(y), Some(1_000_000_000), "Y keeps its spend");
    }
}
