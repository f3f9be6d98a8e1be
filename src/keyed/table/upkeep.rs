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
//! is 12 bits). So each CAS of K that matters is preceded by a read of W that shows the state
//! it expects: still frozen under that K before step 2 (and before an insert claims a frozen
//! bucket), still UNPUBLISHED before a claim is made LIVE. A thread that stalls before that
//! read finds the slot's current state, however many claims happened meanwhile.
//!
//! What remains is a thread preempted at one of a few points, for as long as it takes the slot
//! to go through a multiple of 4,096 claims and come back to the same K (the same key, at the
//! same generation), in the same phase. Short as these windows are in code, a preempted thread
//! can stay in one for any time. The outcomes, all for that one key:
//! - preempted between the W read and the CAS of step 2, or of an insert's claim: a live
//!   bucket is retired without a freeze; its spends are forgotten (it restarts full);
//! - preempted between the read of W and the CAS that makes a claim LIVE: the new claim goes
//!   LIVE with the last tenure's W, which decodes to an arbitrary TAT, most likely far in the
//!   future: the key is denied until its bucket is removed (`evict_idle` never removes it;
//!   an overflow eviction, which takes the bucket nearest to full, removes it last);
//! - preempted between a resolver's rescan and its claim going LIVE: the key can end up live
//!   in two slots, each with its own burst, until one is removed.
//!
//! Each needs thousands of evictions and re-inserts of one key in one slot while one thread
//! is preempted at that point; a 128-bit CAS of K and W together would rule them out, at the
//! cost of the `cmpxchg16b` this layout exists to avoid.

#[cfg(loom)]
use super::super::loom_hooks::Broken;
use super::slot::{self, Slot, FROZEN, UNPUBLISHED};
use super::Table;
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
        while let Some((slot, k, mut w)) = self.lookup(home, slot::tag_of(fp)) {
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
    use super::super::super::OverflowPolicy;
    use super::super::claim::{Room, Step};
    use super::super::request::Request;
    use super::super::slot::{self, zeroed_slots};
    use super::*;
    use crate::Quota;
    use core::time::Duration;

    const Y: u64 = 0x1234_5678_9abc_def0;
    const Z: u64 = 0x0fed_cba9_8765_4321;

    fn quota() -> Quota {
        Quota::try_new(Duration::from_secs(1), 2).unwrap()
    }

    /// One token of the key of fingerprint `fp`, at 0.
    fn request(fp: u64, quota: &Quota) -> Request<'_> {
        Request {
            fp,
            now: 0,
            cost: 1,
            quota,
            start_empty: false,
            max_wait_ns: 0,
        }
    }

    /// A one-slot table where Y's bucket (one spend) was frozen, as by a thread that then
    /// stalled, and the slot then went through 4,096 claims (Y and Z evicting each other), so
    /// that Y is LIVE again with one spend under the same K. Returns the table and that K.
    fn wrapped(quota: &Quota) -> (Table, u64) {
        let table = Table::new(
            zeroed_slots(1).unwrap(),
            1,
            OverflowPolicy::EvictNearestFull,
        );
        let spend = |fp| table.spend(&request(fp, quota)).is_ok();
        assert!(spend(Y));
        let s = &table.slots[0];
        let (k0, w0) = (s.key.load(Ordering::SeqCst), s.tat.load(Ordering::SeqCst));
        assert!(table.freeze(s, k0, w0));
        for _ in 0..2048 {
            assert!(spend(Z));
            assert!(spend(Y));
        }
        assert_eq!(
            s.key.load(Ordering::SeqCst),
            k0,
            "Y is LIVE again under the same K"
        );
        (table, k0)
    }

    #[test]
    fn a_stale_retire_after_the_generation_wraps_leaves_a_live_bucket_alone() {
        let quota = quota();
        let (table, k0) = wrapped(&quota);
        table.retire(&table.slots[0], k0); // the stalled eviction wakes
        let k = table.slots[0].key.load(Ordering::SeqCst);
        assert!(slot::holds_key(k), "Y's live bucket was retired");
        assert_eq!(table.tat_of(Y), Some(1_000_000_000), "Y keeps its spend");
    }

    #[test]
    fn a_stale_claim_after_the_generation_wraps_leaves_a_live_bucket_alone() {
        let quota = quota();
        let (table, k0) = wrapped(&quota);
        // An insert that saw Y's bucket frozen, and stalled before claiming the slot, wakes.
        let room = Room {
            free: Some((0, k0)),
            ..Room::default()
        };
        let step = table.insert(0, &request(0x5555_aaaa_5555_aaaa, &quota), room);
        assert!(matches!(step, Ok(Step::Restart)), "the claim went ahead");
        assert_eq!(table.tat_of(Y), Some(1_000_000_000), "Y keeps its spend");
    }
}
