//! The keyed table: a fixed array of one-word slots, linear probing within a bounded window,
//! and the lock-free protocol that gives each key at most one bucket.
//!
//! # Layout
//! A key's *home* is its fingerprint scaled onto the slot count (multiply-shift, so the count
//! need not be a power of two). Its *window* is the `window` slots from home on, wrapping at
//! the end. The table never grows, so there is no migration step that could lose an update.
//!
//! # Invariants
//! 1. A slot is never EMPTY again once used: removal writes TOMBSTONE.
//! 2. A key is claimed only in a scan that saw every earlier slot of its window non-EMPTY, so a key (pending or live) at window position `p` has no EMPTY
//!    slot before `p` in its window. A scan may therefore stop at the first EMPTY slot.
//! 3. At most one LIVE slot holds a fingerprint at any time (the claim protocol below).
//!
//! # Inserting a new key X
//! 1. **Claim** a free slot (EMPTY or TOMBSTONE; failing that, an idle bucket of another key:
//!    `TAT <= now`, whose removal loses nothing) by a CAS to `(X, PENDING)`. A PENDING slot holds no tokens,
//!    so retracting it (CAS back to TOMBSTONE) loses nothing either.
//! 2. **Resolve**: rescan the window for another slot of X. A live X: retract mine, use it. A
//!    pending X earlier in the window: retract mine and restart (the restart helps that one).
//!    A pending X later in the window: retract it by CAS; if it went live meanwhile, retract
//!    mine and use it.
//! 3. **Publish** by a CAS `(X, PENDING) -> (X, TAT)`, where the TAT is the new bucket's after
//!    the publisher's own request: a new bucket is never visible full and unspent, so another
//!    new key cannot reclaim it as idle before its first spend lands (which could livelock two
//!    keys in one slot). If the CAS fails, mine was retracted (restart the look-up) or a helper
//!    published it (spend from it as from any live bucket).
//!
//! A look-up that meets `(X, PENDING)` resolves and publishes it on the owner's behalf
//! instead of waiting, so a preempted inserter blocks no one. Why two publishes of X cannot
//! both succeed: each publisher read the other's slot during its rescan, after the claim it
//! resolves; in the single total order of `SeqCst` operations, one of those reads comes after
//! the other slot's claim and sees X there, and its publisher then backs off (or retracts the
//! other, which then cannot publish). Hence every operation that changes a slot's fingerprint
//! (claim, publish, retract, eviction) and every read of the scans is `SeqCst`: the argument
//! is about two different words, which weaker orderings do not order. A spend changes only the
//! TAT of a word whose fingerprint it checks in the same CAS, and publishes no other memory,
//! so it is `Relaxed`, as in [`Bucket`](crate::bucket).

use super::slot::{self, EMPTY, PENDING_TAT, TOMBSTONE};
use super::stats::Counters;
use super::OverflowPolicy;
use crate::gcra;
use crate::outcome::{Allowed, Denied, Level};
use crate::quota::Quota;
use crate::sync::{AtomicU128, Ordering};
use alloc::boxed::Box;

/// Deliberately broken steps, one per loom model, which the models must catch.
#[cfg(loom)]
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broken {
    /// The real protocol.
    Nothing,
    /// Claim a slot straight to LIVE, skipping PENDING and the rescan.
    ClaimLiveDirectly,
    /// Evict an idle key by load + store instead of CAS.
    EvictByStore,
    /// Spend by a CAS that compares only the TAT half of the word.
    CasTatOnly,
}

/// A fixed-capacity table of buckets keyed by 64-bit fingerprints.
pub(crate) struct Table {
    slots: Box<[AtomicU128]>,
    window: usize,
    policy: OverflowPolicy,
    pub(crate) counters: Counters,
    #[cfg(loom)]
    pub(crate) broken: Broken,
}

/// One check: the key's fingerprint, the time, the cost, the quota, and the TAT a new bucket
/// of the key starts from.
pub(crate) struct Request<'q> {
    pub(crate) fp: u64,
    pub(crate) now: u64,
    pub(crate) cost: u32,
    pub(crate) quota: &'q Quota,
    pub(crate) initial: u64,
}

/// What a scan of a key's window found.
enum Found {
    /// The key was pending and this check published it, with its own spend applied.
    Mine(Result<Allowed, Denied>),
    /// The key's bucket: window position and TAT.
    Live(usize, u64),
    /// No bucket: where one could go.
    Absent(Room),
}

/// What a scan met, with the words read: the first free (EMPTY or TOMBSTONE) slot, the
/// first idle bucket, and the live bucket nearest to full.
#[derive(Default)]
struct Room {
    free: Option<(usize, u128)>,
    idle: Option<(usize, u128)>,
    nearest_full: Option<(usize, u128)>,
}

/// The end of a resolve or insert: the key's bucket, or start the look-up again.
enum Step {
    /// This check published the key's new bucket with its own spend applied.
    Mine(Result<Allowed, Denied>),
    Live(usize, u64),
    Restart,
}

impl Table {
    /// A table of `slots` EMPTY slots (at least 1) searched `window` slots from home.
    pub(crate) fn new(slots: Box<[AtomicU128]>, window: usize, policy: OverflowPolicy) -> Table {
        let window = window.clamp(1, slots.len());
        Table {
            slots,
            window,
            policy,
            counters: Counters::default(),
            #[cfg(loom)]
            broken: Broken::Nothing,
        }
    }

    /// The number of slots.
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// The home index of a fingerprint: its high bits scaled onto the slot count.
    #[inline(always)]
    pub(crate) fn home(&self, fp: u64) -> usize {
        ((u128::from(fp) * self.slots.len() as u128) >> 64) as usize
    }

    /// The slot at window position `i` from `home`, wrapping at the end of the array.
    #[inline(always)]
    fn at(&self, home: usize, i: usize) -> &AtomicU128 {
        let j = home + i;
        let j = if j >= self.slots.len() {
            j - self.slots.len()
        } else {
            j
        };
        &self.slots[j]
    }

    /// Spends `req.cost` at `req.now` from the bucket of `req.fp`, creating the bucket if it
    /// is absent and the decision changes it.
    pub(crate) fn spend(&self, req: &Request<'_>) -> Result<Allowed, Denied> {
        let home = self.home(req.fp);
        loop {
            let (i, tat) = match self.find(home, req) {
                Found::Mine(outcome) => return outcome,
                Found::Live(i, tat) => (i, tat),
                Found::Absent(room) => {
                    if req.initial == 0 {
                        // A full bucket that this decision leaves full (a peek, or a cost above
                        // the burst) need not be stored: an absent key is full.
                        let (tat, outcome) = decide(0, req);
                        if tat == 0 {
                            return outcome;
                        }
                    }
                    match self.insert(home, req, room) {
                        Ok(Step::Mine(outcome)) => return outcome,
                        Ok(Step::Live(i, tat)) => (i, tat),
                        Ok(Step::Restart) => continue,
                        Err(denied) => return Err(denied),
                    }
                }
            };
            if let Some(outcome) = self.spend_in(self.at(home, i), tat, req) {
                return outcome;
            }
        }
    }

    /// The CAS loop of one bucket, as in [`Bucket::spend`](crate::bucket), with the
    /// fingerprint in the compared word. `None` if the slot no longer holds the key.
    #[inline]
    fn spend_in(
        &self,
        slot: &AtomicU128,
        mut current: u64,
        req: &Request<'_>,
    ) -> Option<Result<Allowed, Denied>> {
        loop {
            let (new, outcome) = decide(current, req);
            if new == current {
                return Some(outcome); // a denial or a peek: nothing to store
            }
            #[cfg(loom)]
            if self.broken == Broken::CasTatOnly {
                return slot
                    .compare_exchange_tat_only(current, new)
                    .ok()
                    .map(|()| outcome);
            }
            // Relaxed on both arms: the word publishes no other memory, and the fingerprint
            // in it is compared by this same CAS (see the module docs).
            match slot.compare_exchange(
                slot::pack(req.fp, current),
                slot::pack(req.fp, new),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(outcome),
                Err(actual) if slot::fingerprint(actual) == req.fp && slot::is_live(actual) => {
                    current = slot::tat(actual);
                }
                Err(_) => return None, // evicted, reclaimed or retracted: look up again
            }
        }
    }

    /// Scans the window of the key up to the first EMPTY slot. A PENDING slot of the key met
    /// on the way is resolved on its owner's behalf.
    fn find(&self, home: usize, req: &Request<'_>) -> Found {
        'restart: loop {
            let mut room = Room::default();
            for i in 0..self.window {
                // SeqCst: a read of the claim protocol (module docs).
                let word = self.at(home, i).load(Ordering::SeqCst);
                if slot::fingerprint(word) == req.fp {
                    if slot::tat(word) != PENDING_TAT {
                        return Found::Live(i, slot::tat(word));
                    }
                    match self.resolve(home, i, req) {
                        Step::Mine(outcome) => return Found::Mine(outcome),
                        Step::Live(i, tat) => return Found::Live(i, tat),
                        Step::Restart => continue 'restart,
                    }
                }
                if word == EMPTY {
                    room.free.get_or_insert((i, word));
                    break;
                }
                if word == TOMBSTONE {
                    room.free.get_or_insert((i, word));
                } else if slot::is_live(word) {
                    if slot::tat(word) <= req.now {
                        room.idle.get_or_insert((i, word));
                    } else if room
                        .nearest_full
                        .is_none_or(|(_, n)| slot::tat(word) < slot::tat(n))
                    {
                        room.nearest_full = Some((i, word));
                    }
                }
            }
            return Found::Absent(room);
        }
    }

    /// Claims room for the key (a free slot, or by the overflow policy) and resolves the claim.
    fn insert(&self, home: usize, req: &Request<'_>, room: Room) -> Result<Step, Denied> {
        // A free slot first, then an idle bucket (lossless to remove), then the policy.
        let (i, seen, overflow) = match (room.free.or(room.idle), room.nearest_full, self.policy) {
            (Some((i, seen)), _, _) => (i, seen, false),
            (None, Some((i, seen)), OverflowPolicy::EvictNearestFull) => (i, seen, true),
            (None, nearest, _) => {
                self.counters.count_denial();
                // Room appears when the bucket nearest to full in the window is full (it is
                // not yet: its TAT is after `now`, or it would have been free). With no such
                // bucket, every slot is being inserted into: room appears very soon.
                let wait = nearest.map_or(1, |(_, w)| slot::tat(w) - req.now);
                // No tokens: the key has no bucket to hold any.
                let empty = level(wait.max(req.quota.depth_ns()), req.quota);
                return Err(Denied::new(empty, Some(wait)));
            }
        };
        #[cfg(loom)]
        if self.broken == Broken::ClaimLiveDirectly {
            let (tat, outcome) = decide(req.initial, req);
            let claimed = self.at(home, i).compare_exchange(
                seen,
                slot::pack(req.fp, tat),
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
            return Ok(claimed.map_or(Step::Restart, |_| Step::Mine(outcome)));
        }
        // SeqCst: a claim of the protocol (module docs).
        let claim = self.at(home, i).compare_exchange(
            seen,
            slot::pack(req.fp, PENDING_TAT),
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        if claim.is_err() {
            return Ok(Step::Restart);
        }
        if slot::is_live(seen) {
            self.counters.key_removed();
            if overflow {
                self.counters.count_eviction();
            }
        }
        Ok(self.resolve(home, i, req))
    }

    /// Steps 2 and 3 of an insert (module docs) for the PENDING slot of the key at position
    /// `p`, by its owner or by a helper. Whoever publishes applies its own request in the
    /// publishing CAS, so a new bucket is never visible full-and-unspent to other keys.
    fn resolve(&self, home: usize, p: usize, req: &Request<'_>) -> Step {
        let fp = req.fp;
        for i in (0..self.window).filter(|&i| i != p) {
            let other = self.at(home, i);
            // SeqCst: a read of the claim protocol (module docs).
            let mut word = other.load(Ordering::SeqCst);
            if word == EMPTY {
                break;
            }
            while slot::fingerprint(word) == fp {
                if slot::tat(word) != PENDING_TAT {
                    self.retract(home, fp, p);
                    return Step::Live(i, slot::tat(word));
                }
                if i < p {
                    self.retract(home, fp, p);
                    return Step::Restart;
                }
                // SeqCst: a retraction of the protocol (module docs).
                match other.compare_exchange(word, TOMBSTONE, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(_) => break,
                    Err(actual) => word = actual,
                }
            }
        }
        let (tat, outcome) = decide(req.initial, req);
        // SeqCst: a publish of the protocol (module docs).
        match self.at(home, p).compare_exchange(
            slot::pack(fp, PENDING_TAT),
            slot::pack(fp, tat),
            Ordering::SeqCst,
            Ordering::SeqCst,
        ) {
            Ok(_) => {
                self.counters.key_added();
                Step::Mine(outcome)
            }
            Err(actual) if slot::fingerprint(actual) == fp && slot::is_live(actual) => {
                Step::Live(p, slot::tat(actual)) // a helper published it
            }
            Err(_) => Step::Restart, // retracted
        }
    }

    /// Turns the PENDING slot of `fp` at position `p` into a TOMBSTONE, if it still is one.
    fn retract(&self, home: usize, fp: u64, p: usize) {
        // SeqCst: a retraction of the protocol (module docs). A failure means someone else
        // retracted it already (it cannot have been published: see the module docs).
        let _ = self.at(home, p).compare_exchange(
            slot::pack(fp, PENDING_TAT),
            TOMBSTONE,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }

    /// The TAT of the bucket of `fp`, if it has one. Creates and helps nothing.
    pub(crate) fn tat_of(&self, fp: u64) -> Option<u64> {
        let home = self.home(fp);
        for i in 0..self.window {
            // SeqCst: as the scans of the claim protocol (cheap: a plain load on x86_64).
            let word = self.at(home, i).load(Ordering::SeqCst);
            if slot::fingerprint(word) == fp && slot::is_live(word) {
                return Some(slot::tat(word));
            }
            if word == EMPTY {
                break;
            }
        }
        None
    }

    /// Removes every bucket that is full at `now` (`TAT <= now`); returns how many.
    pub(crate) fn evict_idle(&self, now: u64) -> usize {
        let mut removed = 0;
        for slot in self.slots.iter() {
            // Relaxed: only a guess; the CAS below decides.
            let word = slot.load(Ordering::Relaxed);
            if !slot::is_live(word) || slot::tat(word) > now {
                continue;
            }
            #[cfg(loom)]
            if self.broken == Broken::EvictByStore {
                slot.store(TOMBSTONE, Ordering::SeqCst);
                removed += 1;
                self.counters.key_removed();
                continue;
            }
            // SeqCst: changes a fingerprint (module docs). Comparing the whole word means a
            // spend that moved the TAT since the load makes this fail: no spend is lost.
            if slot
                .compare_exchange(word, TOMBSTONE, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
            {
                removed += 1;
                self.counters.key_removed();
            }
        }
        removed
    }

    /// How many slots hold a bucket or a claim of `fp`. For the loom models.
    #[cfg(loom)]
    pub(crate) fn slots_holding(&self, fp: u64) -> usize {
        let held = |s: &AtomicU128| slot::fingerprint(s.load(Ordering::SeqCst)) == fp;
        self.slots.iter().filter(|s| held(s)).count()
    }
}

/// The decision of `req` on a bucket at `tat`: the TAT to store (unchanged on a denial or a
/// peek) and the answer. A TAT equal to the PENDING marker cannot be stored: denied.
#[inline(always)]
fn decide(tat: u64, req: &Request<'_>) -> (u64, Result<Allowed, Denied>) {
    match gcra::spend(tat, req.now, req.cost, req.quota) {
        Ok((new, _)) if new == PENDING_TAT => {
            let ahead = tat.saturating_sub(req.now);
            (tat, Err(Denied::new(level(ahead, req.quota), None)))
        }
        Ok((new, allowed)) => (new, Ok(allowed)),
        Err(denied) => (tat, Err(denied)),
    }
}

/// The level of a bucket `reset_after_ns` from full under `quota`.
#[inline]
fn level(reset_after_ns: u64, quota: &Quota) -> Level {
    Level {
        reset_after_ns,
        depth_ns: quota.depth_ns(),
        interval_ns: quota.emission_interval_ns(),
    }
}
