//! Inserting a new key: the lock-free protocol that gives each key at most one bucket. Its
//! five steps (numbered as the code cites them), and the proof that a key never has two live
//! buckets: docs/design.md §6.4; the choice of a victim: §6.5.

use super::super::stats::Counters;
use super::request::{decide, initial_of, Outcome, Request};
use super::seen::Seen;
use super::slot::{tag_of, KeyWord, Slot, FROZEN, UNPUBLISHED};
use super::upkeep;
use super::window::Slots;
use crate::engine::gcra::level;
use crate::outcome::Denied;
use crate::sync::{AtomicU64, Ordering};

/// What a new key does when its window has no room: the table's own copy of
/// [`OverflowPolicy`](crate::OverflowPolicy), so that the table needs nothing of the public face.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Overflow {
    /// Remove the bucket nearest to full in the window; in a table that starts keys empty,
    /// none that is not full (see `Insert::loss`).
    EvictNearestNew,
    DenyNewKeys,
}

/// A found bucket: its window position, the K read, and the W read in the same tenure.
pub(super) type Held = (usize, KeyWord, u64);

/// What a scan met: the first free slot (with its K), the first idle bucket, and the bucket
/// that may be removed for the key though not idle, nearest to full, with its TAT's lead on
/// `now` (none in a table that starts keys empty).
#[derive(Default)]
pub(super) struct Room {
    pub(super) free: Option<(usize, KeyWord)>,
    pub(super) idle: Option<Held>,
    pub(super) nearest_new: Option<(Held, u64)>,
}

/// What a scan of a key's window found.
pub(super) enum Found {
    /// The key was pending and this check published it, with its own spend applied.
    Mine(Outcome),
    /// The key's LIVE bucket.
    Live(Held),
    /// No bucket: where one could go.
    Absent(Room),
}

/// The end of a resolve or insert: the key's bucket, or start the look-up again.
pub(super) enum Step {
    /// This check's decision, already final (a denial for lack of room, or an absent key left
    /// full).
    Mine(Outcome),
    /// The key's LIVE bucket, to spend from (it may still be UNPUBLISHED).
    Live(Held),
    Restart,
}

/// The insert path of one table: its slots, its counters, its overflow policy and, for a table
/// whose new keys start empty, the keys it removed while full.
pub(super) struct Insert<'t> {
    pub(super) slots: &'t Slots,
    pub(super) counters: &'t Counters,
    pub(super) overflow: Overflow,
    pub(super) seen: Option<&'t Seen>,
    /// The latest time at which the table removed a bucket as idle (`request::initial_of`).
    pub(super) floor: &'t AtomicU64,
}

impl Insert<'_> {
    /// The slow path of [`Table::spend`](super::Table::spend), for a key not found live: scans
    /// again, noting room and helping a pending insert of the key, then inserts it if absent.
    #[cold]
    #[inline(never)]
    pub(super) fn find_or_insert(&self, home: usize, req: Request<'_>) -> Step {
        let req = &req;
        match self.find(home, req) {
            Found::Mine(outcome) => Step::Mine(outcome),
            Found::Live(held) => Step::Live(held),
            Found::Absent(room) => {
                let initial = initial_of(self.seen, self.floor, req);
                if initial <= req.now {
                    // A full bucket that this decision leaves as it is (a peek, or a cost above
                    // the burst) need not be stored: an absent key is full.
                    let (tat, outcome) = decide(initial, req);
                    if tat == initial {
                        return Step::Mine(outcome);
                    }
                }
                self.insert(home, req, room)
                    .unwrap_or_else(|denied| Step::Mine(Err(denied)))
            }
        }
    }

    /// Scans the window of the key up to the first EMPTY slot. A PENDING slot of the key met
    /// on the way is resolved on its owner's behalf; a bucket being removed counts as free.
    pub(super) fn find(&self, home: usize, req: &Request<'_>) -> Found {
        let tag = tag_of(req.fp);
        'restart: loop {
            let mut room = Room::default();
            for (i, slot) in self.slots.window(home) {
                let k = slot.key.load();
                if k == KeyWord::EMPTY {
                    room.free.get_or_insert((i, k));
                    break;
                }
                if !k.holds_key() {
                    room.free.get_or_insert((i, k)); // a TOMBSTONE
                    continue;
                }
                if k.is_pending() {
                    if k.tag() == tag {
                        match self.resolve(home, i, k) {
                            Step::Mine(outcome) => return Found::Mine(outcome),
                            Step::Live(held) => return Found::Live(held),
                            Step::Restart => continue 'restart,
                        }
                    }
                    continue;
                }
                let w = slot.tat.load();
                if slot.key.load() != k {
                    continue 'restart; // K moved while W was read
                }
                let tat = w ^ self.slots.mask(k);
                if tat == FROZEN {
                    room.free.get_or_insert((i, k)); // removed; K is about to follow
                } else if k.tag() == tag {
                    return Found::Live((i, k, w));
                } else if tat == UNPUBLISHED {
                    // Another key's insert, about to apply its first spend: not room.
                } else if tat <= req.now {
                    room.idle.get_or_insert((i, k, w));
                } else if let Some(loss) = self.loss(tat, req) {
                    if room.nearest_new.is_none_or(|(_, least)| loss < least) {
                        room.nearest_new = Some(((i, k, w), loss));
                    }
                }
            }
            return Found::Absent(room);
        }
    }

    /// What removing a bucket at `tat` (not idle) to make room loses, to rank victims; `None`
    /// for one that may not be removed: under `start_empty`, no bucket that is not full
    /// (docs/design.md §6.5, *The rule for victims*).
    fn loss(&self, tat: u64, req: &Request<'_>) -> Option<u64> {
        let starts_full = self.seen.is_none();
        (starts_full || self.slots.faults.evicts_not_full_under_start_empty())
            .then(|| tat - req.now)
    }

    /// Claims room for the key (a free slot, or by the overflow policy) and resolves the claim.
    pub(super) fn insert(
        &self,
        home: usize,
        req: &Request<'_>,
        room: Room,
    ) -> Result<Step, Denied> {
        // A free slot first, then an idle bucket (lossless to remove), then the policy.
        let victim = room.nearest_new.map(|(held, _)| held);
        let (i, k, bucket) = match (room.free, room.idle, victim, self.overflow) {
            (Some((i, k)), _, _, _) => (i, k, None),
            (None, Some((i, k, w)), _, _) => (i, k, Some((w, false))),
            (None, None, Some((i, k, w)), Overflow::EvictNearestNew) => (i, k, Some((w, true))),
            (None, None, _, _) => {
                self.counters.count_denial();
                // Room appears when the bucket nearest to full in the window is full; with no
                // such bucket, every slot is being inserted into, and room appears very soon.
                let wait = self.nearest_full(home, req).unwrap_or(1);
                // No tokens: the key has no bucket to hold any.
                let empty = level(wait.max(req.quota.depth_ns()), req.quota);
                return Err(Denied::new(empty, Some(wait)));
            }
        };
        let slot = self.slots.at(home, i);
        if let Some((w, overflow)) = bucket {
            if !overflow {
                // An idle bucket is full: its key comes back full (`seen.rs`), and no earlier
                // than this reading (`request::initial_of`). Both before the freeze.
                if let Some(seen) = self.seen {
                    seen.mark(k.tag());
                }
                // Relaxed: see `request::initial_of`.
                if !self.slots.faults.ignores_floor() {
                    self.floor.fetch_max(req.now, Ordering::Relaxed);
                }
            }
            if !upkeep::freeze(self.slots, slot, k, w) {
                return Ok(Step::Restart); // it was spent from meanwhile
            }
            self.counters.key_removed();
            if overflow {
                self.counters.count_eviction();
            }
        }
        let claim = k.claim(tag_of(req.fp));
        if k.holds_key() && !upkeep::still_frozen(self.slots, slot, k) {
            return Ok(Step::Restart); // K moved on (docs/design.md §6.7)
        }
        if slot.key.compare_exchange(k, claim).is_err() {
            return Ok(Step::Restart);
        }
        Ok(self.resolve(home, i, claim))
    }

    /// How long until the bucket nearest to full in the window of `home` is full (and so
    /// free), at `req.now`: the wait of a key refused for lack of room.
    #[cold]
    fn nearest_full(&self, home: usize, req: &Request<'_>) -> Option<u64> {
        let mut nearest: Option<u64> = None;
        for (_, slot) in self.slots.window(home) {
            let k = slot.key.load();
            if k == KeyWord::EMPTY {
                break;
            }
            if let Some(w) = slot.read_in_tenure(k) {
                let tat = w ^ self.slots.mask(k);
                if tat != FROZEN && tat != UNPUBLISHED && tat > req.now {
                    let wait = tat - req.now;
                    nearest = Some(nearest.map_or(wait, |n| n.min(wait)));
                }
            }
        }
        nearest
    }

    /// Steps 2 to 4 of an insert for the claim `claim` at window position `p`,
    /// by its owner or by a helper. Step 5 is the spend from the bucket returned.
    pub(super) fn resolve(&self, home: usize, p: usize, claim: KeyWord) -> Step {
        if !self.slots.faults.skips_rescan() {
            if let Some(step) = self.rescan(home, p, claim) {
                return step;
            }
        }
        self.initialise(self.slots.at(home, p), claim);
        self.make_live(home, p, claim)
    }

    /// Step 4: the claim `claim` at window position `p`, initialised, made LIVE.
    pub(super) fn make_live(&self, home: usize, p: usize, claim: KeyWord) -> Step {
        let slot = self.slots.at(home, p);
        let live = claim.live();
        let unpublished = UNPUBLISHED ^ self.slots.mask(live);
        // While K is the claim, W stays UNPUBLISHED once initialised; anything else means K
        // moved (docs/design.md §6.7).
        if slot.tat.load() != unpublished && !self.slots.faults.skips_init_recheck() {
            return Step::Restart;
        }
        match slot.key.compare_exchange(claim, live) {
            Err(actual) if actual != live => Step::Restart, // retracted
            // Made LIVE, here or by a helper. The spend publishes it, or finds it published.
            _ => Step::Live((p, live, unpublished)),
        }
    }

    /// Step 2: the rescan for another slot of the key. `None` to go on with the claim.
    fn rescan(&self, home: usize, p: usize, claim: KeyWord) -> Option<Step> {
        let tag = claim.tag();
        for (i, other) in self.slots.window(home).filter(|&(i, _)| i != p) {
            let mut k = other.key.load();
            if k == KeyWord::EMPTY {
                break;
            }
            while k.tag() == tag {
                if !k.is_pending() {
                    match self.slots.read_live(other, k) {
                        Some(w) => {
                            self.retract(self.slots.at(home, p), claim);
                            return Some(Step::Live((i, k, w)));
                        }
                        // Frozen (not a bucket any more), or K moved: read it again.
                        None => {
                            let again = other.key.load();
                            if again == k {
                                break;
                            }
                            k = again;
                            continue;
                        }
                    }
                }
                if i < p {
                    self.retract(self.slots.at(home, p), claim);
                    return Some(Step::Restart);
                }
                match other.key.compare_exchange(k, k.tombstone()) {
                    Ok(_) => break,
                    Err(actual) => k = actual,
                }
            }
        }
        None
    }

    /// Step 3: W of the claim to the masked UNPUBLISHED, unless the claim is no longer PENDING.
    fn initialise(&self, slot: &Slot, claim: KeyWord) {
        let unpublished = UNPUBLISHED ^ self.slots.mask(claim.live());
        let recheck = !self.slots.faults.skips_init_recheck();
        loop {
            // K is read after W.
            let w = slot.tat.load();
            if recheck && slot.key.load() != claim {
                return;
            }
            if w == unpublished {
                return;
            }
            // A failure means W moved: read it again.
            let _ = slot.tat.compare_exchange(w, unpublished);
        }
    }

    /// Turns the claim `claim` into a TOMBSTONE, if it is still PENDING.
    fn retract(&self, slot: &Slot, claim: KeyWord) {
        // A failure means someone else retracted it, or made it LIVE after the other bucket of
        // the key was frozen: then the look-up that follows finds this one.
        let _ = slot.key.compare_exchange(claim, claim.tombstone());
    }
}
