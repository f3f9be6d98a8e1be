//! The look-up of a key's bucket: home's slot alone first, then home's cache line and the next
//! matched together, then the rest of the window slot by slot (see [`table`](super::table) for
//! the invariants it relies on).

#[cfg(loom)]
use super::super::loom_hooks::Broken;
use super::slot::{self, Slot, EMPTY, FROZEN};
use super::{Table, LINE};
use crate::sync::Ordering;

/// Slots a look-up reads before it tests any: home's cache line and the next (see
/// [`Table::lookup`]).
#[cfg(not(loom))]
const GROUP: usize = 2 * LINE;
/// Under loom one "line" of two slots, so that the models' two-slot tables take the grouped
/// path too.
#[cfg(loom)]
const GROUP: usize = LINE;

/// What one slot met by a look-up says.
enum Settled {
    /// The key's bucket: K, and W read in the same tenure.
    Live(u64, u64),
    /// The key is not LIVE here or further on (EMPTY), or this look-up cannot tell (a claim,
    /// or K moved): the slow path decides.
    NotHere,
    /// A frozen bucket of the key: go on.
    PassOver,
}

impl Table {
    /// The hot path: the LIVE bucket of `tag` (its slot, K, and W read in K's tenure), if the
    /// scan (to the first EMPTY slot) meets one. `None` when the key is absent, being inserted
    /// or being removed.
    #[inline(always)]
    pub(super) fn lookup(&self, home: usize, tag: u64) -> Option<(&Slot, u64, u64)> {
        // The first slot that settles it: the key's LIVE bucket, its claim, or an EMPTY slot.
        // A frozen bucket of the key is passed over (the key may be live further on).
        let mut start = 0;
        // Home first, alone: at full load 60% of keys are there. A check at 1,000,000 keys is
        // bound by how many cache misses of successive checks the processor overlaps, and that
        // falls as the instructions and loads a check issues grow; one load and one compare,
        // with a branch mispredicted for the other 40%, left such a check at 0.83-0.93x the
        // time of matching all 8 slots every time (paired, both builds in each role).
        {
            let slot = &self.slots[home];
            // SeqCst: a read of the claim protocol (module docs); window position 0.
            let k = slot.key.load(Ordering::SeqCst);
            if slot::tag(k) == tag {
                match self.settle(slot, k) {
                    Settled::Live(k, w) => return Some((slot, k, w)),
                    Settled::NotHere => return None,
                    Settled::PassOver => {} // scan the window again, from home
                }
            }
        }
        // The slots of home's cache line and the next, from home on, are read together and
        // matched without a branch per slot: at full load most keys are within a slot or two of
        // home, and the exit of a loop whose length varies from key to key is a branch the
        // processor often mispredicts. At a load of 0.8, 24% of keys lie past home's line but
        // only 9% past the next one; reading the second line took a check at 1,000 keys from
        // 32-34 to 29-31 ns, and left 1,000,000 keys no slower (its cache miss overlaps the
        // first, and the adjacent-line prefetcher often brings it anyway).
        let off = (self.line_phase + home) % LINE;
        let line = home
            .checked_sub(off)
            .and_then(|base| self.slots.get(base..base + GROUP))
            .filter(|_| self.window >= GROUP - off);
        if let Some(line) = line {
            // SeqCst: reads of the claim protocol (module docs), in slot order.
            let keys: [u64; GROUP] = core::array::from_fn(|i| line[i].key.load(Ordering::SeqCst));
            start = GROUP - off;
            // Only the tag is matched first: by invariant 2 no EMPTY slot precedes the key's in
            // its window, so the first slot of the tag settles it whenever the key is in these
            // lines. (A concurrent insert can fill an EMPTY slot between two of these reads,
            // but then the slot of the tag read after it is a slot the key really holds.) A
            // different key with the same tag and a later home may now be met past an EMPTY
            // slot of the group, where the slow path stops; that is a collision within the
            // window, inside the bound of the README's *Fingerprints and collisions*.
            let tags = keys.iter().enumerate().fold(0u32, |mask, (i, &k)| {
                mask | u32::from(slot::tag(k) == tag) << i
            }) >> off;
            if tags != 0 {
                let i = tags.trailing_zeros() as usize;
                match self.settle(&line[off + i], keys[off + i]) {
                    Settled::Live(k, w) => return Some((&line[off + i], k, w)),
                    Settled::NotHere => return None,
                    Settled::PassOver => start = i + 1,
                }
            } else if keys[off..].contains(&EMPTY) {
                return None; // an EMPTY slot, and no slot of the key before it
            }
        }
        // The rest of the window, slot by slot.
        let mut j = home + start;
        for _ in start..self.window {
            if j >= self.slots.len() {
                j -= self.slots.len();
            }
            let slot = &self.slots[j];
            // SeqCst: a read of the claim protocol (module docs).
            let k = slot.key.load(Ordering::SeqCst);
            if slot::tag(k) == tag || k == EMPTY {
                match self.settle(slot, k) {
                    Settled::Live(k, w) => return Some((slot, k, w)),
                    Settled::NotHere => return None,
                    Settled::PassOver => {}
                }
            }
            j += 1;
        }
        None
    }

    /// What the slot whose K was read as `k` (EMPTY, or of the key looked up) says about the
    /// key.
    #[inline(always)]
    fn settle(&self, slot: &Slot, k: u64) -> Settled {
        if k == EMPTY || slot::is_pending(k) {
            return Settled::NotHere; // absent, or being inserted: the slow path helps
        }
        // SeqCst, both: reads of the protocol (module docs). K unchanged after W was read
        // means that W was read in K's tenure.
        let w = slot.tat.load(Ordering::SeqCst);
        #[cfg(loom)]
        let recheck = self.broken != Broken::LookupWithoutRecheck;
        #[cfg(not(loom))]
        let recheck = true;
        if recheck && slot.key.load(Ordering::SeqCst) != k {
            return Settled::NotHere; // moved meanwhile: the slow path sorts it out
        }
        if w ^ self.mask(k) == FROZEN {
            Settled::PassOver
        } else {
            Settled::Live(k, w)
        }
    }
}
