//! The look-up of a key's bucket: home's slot alone first, then home's cache line and the next
//! matched together, then the rest of the window slot by slot (docs/design.md §6.3).

use super::slot::{KeyWord, Slot, FROZEN};
use super::window::{Slots, LINE};
use crate::hint::cold_path;

/// Slots a look-up reads before it tests any: home's cache line and the next (see
/// [`lookup`]).
#[cfg(not(loom))]
const GROUP: usize = 2 * LINE;
/// Under loom one "line" of two slots, so that the models' two-slot tables take the grouped
/// path too.
#[cfg(loom)]
const GROUP: usize = LINE;

/// What one slot met by a look-up says.
enum Settled {
    /// The key's bucket: K, and W read in the same tenure.
    Live(KeyWord, u64),
    /// An EMPTY slot: the key is not LIVE here or further on (invariant 2).
    Absent,
    /// K moved between the reads of W and K: the slot's tenure ended while it was read, and the
    /// key may now be LIVE anywhere in its window. Scan again.
    Moved,
    /// A claim of the key (it holds no tokens) or a frozen bucket of it: go on, the key may be
    /// LIVE further on.
    PassOver,
}

/// What a scan of a key's window found.
pub(super) enum Scan<'a> {
    /// The key's LIVE bucket: its slot, K, and W read in K's tenure.
    Live(&'a Slot, KeyWord, u64),
    /// No LIVE bucket of the key: it is absent, or only claimed, or being removed.
    Absent,
    /// A slot of the key changed while it was read: the answer is unknown, scan again.
    Moved,
}

/// The hot path: the LIVE bucket of `tag`, if the scan meets one. `None` when the key is
/// absent, only claimed, being removed, or moved while it was read: the slow path of a spend
/// ([`claim`](super::claim)) scans again and sorts all of these out.
#[inline(always)] // BENCHMARKS.md, "Keyed, paired"
pub(super) fn lookup(slots: &Slots, home: usize, tag: u64) -> Option<(&Slot, KeyWord, u64)> {
    match scan(slots, home, tag) {
        Scan::Live(slot, k, w) => Some((slot, k, w)),
        Scan::Absent | Scan::Moved => None,
    }
}

/// The LIVE bucket of `tag`, scanning again whenever a slot of the key moved while it was
/// read, so that `None` means the key had no LIVE bucket at some moment of the scan. For the
/// operations that have no slow path of their own (reading a TAT, rewriting it).
#[inline]
pub(super) fn lookup_settled(
    slots: &Slots,
    home: usize,
    tag: u64,
) -> Option<(&Slot, KeyWord, u64)> {
    loop {
        match scan(slots, home, tag) {
            Scan::Live(slot, k, w) => return Some((slot, k, w)),
            Scan::Absent => return None,
            Scan::Moved => {}
        }
    }
}

/// The scan of the window of `tag` to the first EMPTY slot: the first LIVE, unfrozen bucket of
/// the key settles it. A claim of the key holds no tokens and a frozen bucket is being
/// removed, so both are passed over: the key may be LIVE further on (a claim in front of the
/// key's bucket is a duplicate insert that its resolver is about to retract).
#[inline(always)] // BENCHMARKS.md, "Keyed, paired"
fn scan(slots: &Slots, home: usize, tag: u64) -> Scan<'_> {
    let mut start = 0;
    // Home first, alone: at full load most keys are there, and a check of a large table is
    // bound by how many misses the processor overlaps, which falls as a check's instructions
    // grow: one load and compare beats matching 8 slots (BENCHMARKS.md, "Keyed, paired").
    {
        let slot = &slots.slots[home];
        let k = slot.key.load();
        if k.tag() == tag {
            match settle(slots, slot, k) {
                Settled::Live(k, w) => return Scan::Live(slot, k, w),
                Settled::Absent => return Scan::Absent,
                Settled::Moved => return Scan::Moved,
                Settled::PassOver => {} // scan the window again, from home
            }
        }
    }
    // Home's cache line and the next, from home on, are read together and matched without a
    // branch per slot: a loop whose length varies from key to key ends in a branch the
    // processor often mispredicts, and a key past home's line is most often in the next.
    let off = (slots.line_phase + home) % LINE;
    let line = home
        .checked_sub(off)
        .and_then(|base| slots.slots.get(base..base + GROUP))
        .filter(|_| slots.window >= GROUP - off);
    if let Some(line) = line {
        start = GROUP - off;
        // Only the tag is matched first: by invariant 2 no EMPTY slot precedes the key's in
        // its window, so the first slot of the tag settles it whenever the key is in these
        // lines. (A concurrent insert can fill an EMPTY slot between two of these reads,
        // but then the slot of the tag read after it is a slot the key really holds.) A
        // different key with the same tag and a later home may now be met past an EMPTY
        // slot of the group, where the slow path stops: a collision within the window,
        // inside the bound of docs/design.md §6.6. Only a bit mask of the words is kept
        // (an array would be stored to memory before the compare-and-swap): the matching
        // slot is read again, and so is the group when none matched (§6.3).
        let tags = line.iter().enumerate().fold(0u32, |mask, (i, s)| {
            mask | u32::from(s.key.load().tag() == tag) << i
        }) >> off;
        if tags != 0 {
            let i = off + tags.trailing_zeros() as usize;
            let k = line[i].key.load();
            if k.tag() != tag {
                // The slot went to another key since the read above: that key may have
                // moved anywhere in its window meanwhile, so scan again.
                return Scan::Moved;
            }
            match settle(slots, &line[i], k) {
                Settled::Live(k, w) => return Scan::Live(&line[i], k, w),
                Settled::Absent => return Scan::Absent,
                Settled::Moved => return Scan::Moved,
                Settled::PassOver => start = i + 1 - off,
            }
        } else if line[off..].iter().any(|s| s.key.load() == KeyWord::EMPTY) {
            return Scan::Absent; // an EMPTY slot, and no slot of the key before it
        }
    }
    scan_rest(slots, home, tag, start)
}

/// The rest of `tag`'s window from slot `start` past home, slot by slot. Out of line: at a
/// load of 0.8 fewer than a tenth of look-ups get here, and inlined, its loop would sit among
/// the instructions every check runs and spread them over more cache lines.
#[cold]
#[inline(never)]
fn scan_rest(slots: &Slots, home: usize, tag: u64, start: usize) -> Scan<'_> {
    let mut j = home + start;
    for _ in start..slots.window {
        if j >= slots.slots.len() {
            j -= slots.slots.len();
        }
        let slot = &slots.slots[j];
        let k = slot.key.load();
        if k.tag() == tag || k == KeyWord::EMPTY {
            match settle(slots, slot, k) {
                Settled::Live(k, w) => return Scan::Live(slot, k, w),
                Settled::Absent => return Scan::Absent,
                Settled::Moved => return Scan::Moved,
                Settled::PassOver => {}
            }
        }
        j += 1;
    }
    Scan::Absent
}

/// What the slot whose K was read as `k` (EMPTY, or of the key looked up) says about the
/// key.
#[inline(always)] // BENCHMARKS.md, "Keyed, paired"
fn settle(slots: &Slots, slot: &Slot, k: KeyWord) -> Settled {
    if k == KeyWord::EMPTY {
        return Settled::Absent;
    }
    if k.is_pending() {
        // A claim holds no tokens; the key's bucket, if it has one, is further on.
        cold_path(); // a claim lives only while its key is inserted
        return if slots.faults.claim_hides_bucket() {
            Settled::Absent
        } else {
            Settled::PassOver
        };
    }
    // K unchanged after W was read means that W was read in K's tenure.
    let w = slot.tat.load();
    if !slots.faults.skips_lookup_recheck() && slot.key.load() != k {
        cold_path(); // the slot changed hands between two loads
        return Settled::Moved;
    }
    if w ^ slots.mask(k) == FROZEN {
        cold_path(); // frozen only while its bucket is removed
        Settled::PassOver
    } else {
        Settled::Live(k, w)
    }
}
