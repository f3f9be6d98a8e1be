//! The look-up of the hot path against a plain scan of the window, on every small table: the
//! grouped read of home's cache line and the next must settle on the same slot as the scan
//! would.

use super::lookup::lookup;
use super::loom_hooks::Faults;
use super::memory::zeroed_slots;
use super::slot::{KeyWord, Slot, FROZEN};
use super::window::{Slots, LINE};

const EMPTY: KeyWord = KeyWord::EMPTY;

/// The tag looked up, and another key's.
const TAG: u64 = 5;
const OTHER: u64 = 6;

/// The window scan as the module docs of the table state it: the first slot holding TAG that is
/// LIVE and not frozen (found), passing over claims of TAG, or the first EMPTY slot (not here).
fn reference(table: &Slots, home: usize) -> Option<(*const Slot, KeyWord, u64)> {
    scan(table, home, true)
}

/// The scan without stopping at EMPTY slots. A table that breaks invariant 2 is a snapshot
/// that concurrent inserts can show a look-up (an EMPTY slot filled between two of its
/// reads); the look-up may answer it as this scan or as [`reference`] does, both being answers
/// that some moment of the reads supports, and nothing else.
fn tag_scan(table: &Slots, home: usize) -> Option<(*const Slot, KeyWord, u64)> {
    scan(table, home, false)
}

/// The first slot of `home`'s window holding TAG that is LIVE and not frozen (found); `None`
/// at the first EMPTY slot if `stop_at_empty`.
fn scan(table: &Slots, home: usize, stop_at_empty: bool) -> Option<(*const Slot, KeyWord, u64)> {
    let n = table.slots.len();
    for i in 0..table.window {
        let s = &table.slots[(home + i) % n];
        let k = s.key.load();
        let w = s.tat.load();
        if k.tag() == TAG {
            if !k.is_pending() && w ^ k.mask() != FROZEN {
                return Some((s as *const Slot, k, w));
            }
        } else if k == EMPTY && stop_at_empty {
            return None;
        }
    }
    None
}

/// Whether the slots of `home`'s window keep invariant 2 of `table` for TAG: no EMPTY slot
/// before a slot holding it.
fn keeps_invariant_2(table: &Slots, home: usize) -> bool {
    let n = table.slots.len();
    let k = |i: usize| table.slots[(home + i) % n].key.load();
    let first_empty = (0..table.window).find(|&i| k(i) == EMPTY);
    first_empty.is_none_or(|e| (e..table.window).all(|i| k(i).tag() != TAG))
}

/// Slot `s` of `table` set to state `state` (0..6) by compare-and-swaps from all-zero.
fn set(table: &Slots, s: usize, state: u64) {
    let set_words = |k: KeyWord, tat: Option<u64>| {
        let slot = &table.slots[s];
        slot.key.compare_exchange(EMPTY, k).unwrap();
        if let Some(tat) = tat {
            slot.tat.compare_exchange(0, tat ^ k.mask()).unwrap();
        }
    };
    match state {
        0 => {}                                                      // EMPTY
        1 => set_words(EMPTY.claim(OTHER).live().tombstone(), None), // TOMBSTONE
        2 => set_words(EMPTY.claim(OTHER).live(), Some(100)),        // another key
        3 => set_words(EMPTY.claim(TAG), None),                      // being inserted
        4 => set_words(EMPTY.claim(TAG).live(), Some(200)),          // the key
        _ => set_words(EMPTY.claim(TAG).live(), Some(FROZEN)),       // being removed
    }
}

#[test]
fn the_grouped_look_up_settles_where_a_plain_scan_does() {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut found, mut kept, mut broken) = (0, 0, 0);
    for n in 1..=13 {
        for window in 1..=n {
            for home in 0..n {
                // Every position of the array in its cache lines, and tables with few to many
                // slots of the key (a look-up whose group holds no slot of the key takes
                // another branch than one whose group does).
                for (phase, tag_weight) in (0..LINE).flat_map(|p| (0..4).map(move |w| (p, w))) {
                    for _ in 0..4 {
                        let mut table = Slots::new(zeroed_slots(n).unwrap(), window, Faults::NONE);
                        table.set_line_phase(phase);
                        for s in 0..n {
                            let tagged = next() % 4 < tag_weight;
                            set(&table, s, 3 * u64::from(tagged) + next() % 3);
                        }
                        let got =
                            lookup(&table, home, TAG).map(|(s, k, w)| (s as *const Slot, k, w));
                        let context = format!("n {n}, window {window}, home {home}, phase {phase}");
                        if keeps_invariant_2(&table, home) {
                            kept += 1;
                            assert_eq!(got, reference(&table, home), "{context}");
                            found += usize::from(got.is_some());
                        } else {
                            broken += 1;
                            let either = [reference(&table, home), tag_scan(&table, home)];
                            assert!(either.contains(&got), "{context}: {got:?}, not {either:?}");
                        }
                    }
                }
            }
        }
    }
    assert!(kept > 20_000, "too few tables keep invariant 2: {kept}");
    assert!(broken > 5_000, "too few tables break invariant 2: {broken}");
    assert!(found > 5_000, "too few look-ups found the key: {found}");
}
