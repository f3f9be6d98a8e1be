//! Inserting a new key: the lock-free protocol that gives each key at most one bucket.
//!
//! # Inserting a new key X
//! 1. **Claim** a free slot (EMPTY, TOMBSTONE or a frozen bucket; failing that, an idle bucket
//!    of another key, `TAT <= now`, whose removal loses nothing; failing that, the overflow
//!    policy) by a CAS of K to `PENDING(X)`, one generation on. A bucket is frozen first (see
//!    [`upkeep`](super::upkeep)), so that no spend of its key is lost. A PENDING slot holds no
//!    tokens, so retracting it (CAS of K to TOMBSTONE) loses nothing either.
//! 2. **Resolve**: rescan the window for another slot of X. A LIVE X: retract mine, use it. A
//!    PENDING X earlier in the window: retract mine and restart (the restart helps that one).
//!    A PENDING X later in the window: retract it by CAS; if it went LIVE meanwhile, retract
//!    mine and use it.
//! 3. **Initialise W** to the masked UNPUBLISHED: read W, read K again, and if K is still the
//!    claim, CAS W from the value read. (Checking K after W means the value was read before
//!    the claim went LIVE, so it is junk of an earlier tenure, never a spend of this one.)
//! 4. **Make it LIVE** by a CAS of K from `PENDING(X)` to `LIVE(X)`. It fails if the claim
//!    was retracted (restart the look-up) or a helper made it LIVE (go on). W is read once
//!    more just before, and must still be UNPUBLISHED (see [`upkeep`](super::upkeep), *A
//!    stalled thread*, for what this guards against and what it cannot).
//! 5. **Publish**: CAS W from UNPUBLISHED to the new bucket's TAT after the publisher's own
//!    request (an ordinary spend that finds UNPUBLISHED does this). A new bucket is therefore
//!    never visible full and unspent, so another new key cannot reclaim it as idle before its
//!    first spend lands (which could livelock two keys in one slot).
//!
//! A look-up that meets `PENDING(X)` resolves it and makes it LIVE on the owner's behalf, and
//! one that meets UNPUBLISHED publishes it, instead of waiting: a preempted inserter blocks no
//! one.
//!
//! # Why X never has two live buckets
//! Suppose X is live at window positions `p < q` at once, made LIVE by `L_p` and `L_q`. Let
//! `C_p` be the claim that `L_p` made LIVE (the write of `PENDING(X)` to slot `p`, of one
//! generation, so there is exactly one within 4,096 claims of the slot; see [`upkeep`](super::upkeep),
//! *A stalled thread*, for longer): slot `p` holds X from `C_p` until the bucket is
//! frozen. Likewise `C_q` for `q`. The resolver that made `q` LIVE rescanned slot `p` at some
//! `r_q` after `C_q` (it made or saw that claim first) and saw no X there, so `r_q` precedes
//! `C_p` (or follows the end of `p`'s tenure, and then the two were not live at once). The
//! resolver of `p` rescanned slot `q` at `r_p` after `C_p`; had it seen X there (PENDING: it
//! retracts it, which makes `L_q` fail; LIVE: it backs off) it would not have gone on, so `r_p`
//! precedes `C_q`. Then `C_q < r_q < C_p < r_p < C_q`: impossible in the single total order of
//! `SeqCst` operations. (A rescan that stopped at an EMPTY slot before `p` read it before `p`'s
//! claimer saw it non-EMPTY, which is also before `C_p`.) This is why every write of K and
//! every read of the scans is `SeqCst`: the argument is about two different words, which
//! weaker orderings do not order. The loom models check the protocol under sequential
//! consistency; this argument is what carries it to the real orderings.

#[cfg(loom)]
use super::super::loom_hooks::Broken;
use super::super::OverflowPolicy;
use super::request::Outcome;
use super::request::{decide, level, Request};
use super::slot::{self, Slot, EMPTY, FROZEN, UNPUBLISHED};
use super::{Held, Table};
use crate::outcome::Denied;
use crate::sync::Ordering;

/// What a scan met: the first free slot (with its K), the first idle bucket, and the bucket
/// nearest to full.
#[derive(Default)]
pub(super) struct Room {
    pub(super) free: Option<(usize, u64)>,
    pub(super) idle: Option<Held>,
    pub(super) nearest_full: Option<Held>,
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

impl Table {
    /// The slow path of [`spend`](Self::spend): the key was not found live. Scans again,
    /// noting room and helping a pending insert of the key, then inserts it if still absent.
    #[cold]
    #[inline(never)]
    pub(super) fn find_or_insert(&self, home: usize, req: Request<'_>) -> Step {
        let req = &req;
        match self.find(home, req) {
            Found::Mine(outcome) => Step::Mine(outcome),
            Found::Live(held) => Step::Live(held),
            Found::Absent(room) => {
                if req.initial() == 0 {
                    // A full bucket that this decision leaves full (a peek, or a cost above
                    // the burst) need not be stored: an absent key is full.
                    let (tat, outcome) = decide(0, req);
                    if tat == 0 {
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
        let tag = slot::tag_of(req.fp);
        'restart: loop {
            let mut room = Room::default();
            for (i, slot) in self.window(home) {
                // SeqCst: a read of the claim protocol (module docs).
                let k = slot.key.load(Ordering::SeqCst);
                if k == EMPTY {
                    room.free.get_or_insert((i, k));
                    break;
                }
                if !slot::holds_key(k) {
                    room.free.get_or_insert((i, k)); // a TOMBSTONE
                    continue;
                }
                if slot::is_pending(k) {
                    if slot::tag(k) == tag {
                        match self.resolve(home, i, k) {
                            Step::Mine(outcome) => return Found::Mine(outcome),
                            Step::Live(held) => return Found::Live(held),
                            Step::Restart => continue 'restart,
                        }
                    }
                    continue;
                }
                // SeqCst, both: reads of the protocol (module docs).
                let w = slot.tat.load(Ordering::SeqCst);
                if slot.key.load(Ordering::SeqCst) != k {
                    continue 'restart; // K moved while W was read
                }
                let tat = w ^ self.mask(k);
                if tat == FROZEN {
                    room.free.get_or_insert((i, k)); // removed; K is about to follow
                } else if slot::tag(k) == tag {
                    return Found::Live((i, k, w));
                } else if tat == UNPUBLISHED {
                    // Another key's insert, about to apply its first spend: not room.
                } else if tat <= req.now {
                    room.idle.get_or_insert((i, k, w));
                } else if room
                    .nearest_full
                    .is_none_or(|(_, nk, nw)| tat < nw ^ self.mask(nk))
                {
                    room.nearest_full = Some((i, k, w));
                }
            }
            return Found::Absent(room);
        }
    }

    /// Claims room for the key (a free slot, or by the overflow policy) and resolves the claim.
    pub(super) fn insert(
        &self,
        home: usize,
        req: &Request<'_>,
        room: Room,
    ) -> Result<Step, Denied> {
        // A free slot first, then an idle bucket (lossless to remove), then the policy.
        let (i, k, bucket) = match (room.free, room.idle, room.nearest_full, self.policy) {
            (Some((i, k)), _, _, _) => (i, k, None),
            (None, Some((i, k, w)), _, _) => (i, k, Some((w, false))),
            (None, None, Some((i, k, w)), OverflowPolicy::EvictNearestFull) => {
                (i, k, Some((w, true)))
            }
            (None, None, nearest, _) => {
                self.counters.count_denial();
                // Room appears when the bucket nearest to full in the window is full (it is
                // not yet: its TAT is after `now`, or it would have been free). With no such
                // bucket, every slot is being inserted into: room appears very soon.
                let wait = nearest.map_or(1, |(_, k, w)| (w ^ self.mask(k)) - req.now);
                // No tokens: the key has no bucket to hold any.
                let empty = level(wait.max(req.quota.depth_ns()), req.quota);
                return Err(Denied::new(empty, Some(wait)));
            }
        };
        let slot = self.at(home, i);
        if let Some((w, overflow)) = bucket {
            if !self.freeze(slot, k, w) {
                return Ok(Step::Restart); // it was spent from meanwhile
            }
            if overflow {
                self.counters.count_eviction();
            }
        }
        let claim = slot::pending(slot::tag_of(req.fp), k);
        if slot::holds_key(k) && !self.still_frozen(slot, k) {
            return Ok(Step::Restart); // K moved on (see `upkeep`, *A stalled thread*)
        }
        // SeqCst: a claim of the protocol (module docs).
        if slot
            .key
            .compare_exchange(k, claim, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Ok(Step::Restart);
        }
        Ok(self.resolve(home, i, claim))
    }

    /// Steps 2 to 4 of an insert (module docs) for the claim `claim` at window position `p`,
    /// by its owner or by a helper. Step 5 is the spend from the bucket returned.
    pub(super) fn resolve(&self, home: usize, p: usize, claim: u64) -> Step {
        if !self.skips_rescan() {
            if let Some(step) = self.rescan(home, p, claim) {
                return step;
            }
        }
        let slot = self.at(home, p);
        let live = slot::live(claim);
        let unpublished = UNPUBLISHED ^ self.mask(live);
        self.initialise(slot, claim);
        // SeqCst: a read of the protocol (module docs). While K is the claim, W stays
        // UNPUBLISHED once initialised; anything else means K moved (see `upkeep`, *A stalled
        // thread*).
        if slot.tat.load(Ordering::SeqCst) != unpublished && !self.skips_init_recheck() {
            return Step::Restart;
        }
        // SeqCst: a write of K (module docs).
        match slot
            .key
            .compare_exchange(claim, live, Ordering::SeqCst, Ordering::SeqCst)
        {
            Err(actual) if actual != live => Step::Restart, // retracted
            // Made LIVE, here or by a helper. The spend publishes it, or finds it published.
            _ => Step::Live((p, live, unpublished)),
        }
    }

    /// Step 2: the rescan for another slot of the key. `None` to go on with the claim.
    fn rescan(&self, home: usize, p: usize, claim: u64) -> Option<Step> {
        let tag = slot::tag(claim);
        for (i, other) in self.window(home).filter(|&(i, _)| i != p) {
            // SeqCst: a read of the claim protocol (module docs).
            let mut k = other.key.load(Ordering::SeqCst);
            if k == slot::EMPTY {
                break;
            }
            while slot::tag(k) == tag {
                if !slot::is_pending(k) {
                    match self.read_live(other, k) {
                        Some(w) => {
                            self.retract(self.at(home, p), claim);
                            return Some(Step::Live((i, k, w)));
                        }
                        // Frozen (not a bucket any more), or K moved: read it again.
                        None => {
                            // SeqCst: a read of the claim protocol (module docs).
                            let again = other.key.load(Ordering::SeqCst);
                            if again == k {
                                break;
                            }
                            k = again;
                            continue;
                        }
                    }
                }
                if i < p {
                    self.retract(self.at(home, p), claim);
                    return Some(Step::Restart);
                }
                // SeqCst: a retraction of the protocol (module docs).
                match other.key.compare_exchange(
                    k,
                    slot::tombstone(k),
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                ) {
                    Ok(_) => break,
                    Err(actual) => k = actual,
                }
            }
        }
        None
    }

    /// Step 3: W of the claim to the masked UNPUBLISHED, unless the claim is no longer PENDING.
    fn initialise(&self, slot: &Slot, claim: u64) {
        let unpublished = UNPUBLISHED ^ self.mask(slot::live(claim));
        loop {
            // SeqCst, both: reads of the protocol (module docs). K is read after W.
            let w = slot.tat.load(Ordering::SeqCst);
            if !self.skips_init_recheck() && slot.key.load(Ordering::SeqCst) != claim {
                return;
            }
            if w == unpublished {
                return;
            }
            // SeqCst: a write of the protocol (module docs). A failure means W moved: read
            // it again.
            let _ = slot
                .tat
                .compare_exchange(w, unpublished, Ordering::SeqCst, Ordering::SeqCst);
        }
    }

    /// Turns the claim `claim` into a TOMBSTONE, if it is still PENDING.
    fn retract(&self, slot: &Slot, claim: u64) {
        // SeqCst: a retraction of the protocol (module docs). A failure means someone else
        // retracted it, or made it LIVE after the other bucket of the key was frozen: then
        // the look-up that follows finds this one.
        let _ = slot.key.compare_exchange(
            claim,
            slot::tombstone(claim),
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }

    /// Whether this is the loom twin that skips step 2.
    #[inline(always)]
    fn skips_rescan(&self) -> bool {
        #[cfg(loom)]
        return self.broken == Broken::SkipRescan;
        #[cfg(not(loom))]
        false
    }

    /// Whether this is the loom twin that does not check K after reading W in step 3.
    #[inline(always)]
    fn skips_init_recheck(&self) -> bool {
        #[cfg(loom)]
        return self.broken == Broken::InitWithoutRecheck;
        #[cfg(not(loom))]
        false
    }
}
