//! The keyed table: a fixed array of one-word slots, linear probing within a bounded window,
//! and the look-up, spend and eviction on it. Inserting a new key is in [`claim`](super::claim).
//!
//! # Layout
//! A key's *home* is its fingerprint scaled onto the slot count (multiply-shift, so the count
//! need not be a power of two). Its *window* is the `window` slots from home on, wrapping at
//! the end. The table never grows, so there is no migration step that could lose an update.
//!
//! # Invariants
//! 1. A slot is never EMPTY again once used: removal writes TOMBSTONE.
//! 2. A key is claimed only in a scan that saw every earlier slot of its window non-EMPTY, so
//!    a key (pending or live) at window position `p` has no EMPTY slot before `p` in its
//!    window. A scan may therefore stop at the first EMPTY slot.
//! 3. At most one LIVE slot holds a fingerprint at any time (the claim protocol).
//!
//! # Orderings
//! Every operation that changes a slot's fingerprint (claim, publish, retract, eviction) and
//! every read of the scans is `SeqCst`: the claim protocol's argument is about two different
//! words, which weaker orderings do not order (see [`claim`](super::claim)). A spend changes
//! only the TAT of a word whose fingerprint it checks in the same CAS, and publishes no other
//! memory, so it is `Relaxed`, as in [`Bucket`](crate::bucket). On x86_64 a `SeqCst` load of
//! a slot is the same instruction as a relaxed one.

use super::claim::{Room, Step};
use super::request::{decide, Outcome, Request};
use super::slot::{self, EMPTY, PENDING_TAT, TOMBSTONE};
use super::stats::Counters;
use super::window::{self, Window};
use super::OverflowPolicy;
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
    pub(super) window: usize,
    pub(super) policy: OverflowPolicy,
    pub(crate) counters: Counters,
    #[cfg(loom)]
    pub(crate) broken: Broken,
}

/// What a scan of a key's window found.
pub(super) enum Found {
    /// The key was pending and this check published it, with its own spend applied.
    Mine(Outcome),
    /// The key's bucket: window position and TAT.
    Live(usize, u64),
    /// No bucket: where one could go.
    Absent(Room),
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

    /// Starts fetching the first two cache lines of the window of `fp`, for a check of it a
    /// little later (see [`batch`](super::batch)). A line holds 4 slots, and at full load a
    /// key is often a slot or more past its home, so the second line is fetched too: a batch
    /// at 1,000,000 keys ran in about 0.7x the time with it.
    #[inline(always)]
    pub(crate) fn prefetch_home(&self, fp: u64) {
        let home = self.home(fp);
        super::prefetch::prefetch(&self.slots[home]);
        super::prefetch::prefetch(&self.slots[(home + 4).min(self.slots.len() - 1)]);
    }

    /// The slots of the window of `home` with their window positions, in probing order.
    #[inline(always)]
    pub(super) fn window(&self, home: usize) -> Window<'_> {
        window::window(&self.slots, home, self.window)
    }

    /// The slot at window position `i` from `home`, wrapping at the end of the array.
    #[inline(always)]
    pub(super) fn at(&self, home: usize, i: usize) -> &AtomicU128 {
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
    #[inline]
    pub(crate) fn spend(&self, req: &Request<'_>) -> Outcome {
        let home = self.home(req.fp);
        loop {
            let (i, tat) = match self.lookup(home, req.fp) {
                Some(found) => found,
                None => match self.find_or_insert(home, req) {
                    Step::Mine(outcome) => return outcome,
                    Step::Live(i, tat) => (i, tat),
                    Step::Restart => continue,
                },
            };
            if let Some(outcome) = self.spend_in(self.at(home, i), tat, req) {
                return outcome;
            }
        }
    }

    /// The hot path: the window position and TAT of the live bucket of `fp`, if the scan (to
    /// the first EMPTY slot) meets one. `None` when the key is absent or being inserted.
    #[inline]
    fn lookup(&self, home: usize, fp: u64) -> Option<(usize, u64)> {
        // The first slot that settles it: the key's (live or pending), or an EMPTY one. By
        // `find_map`, not a `for` loop, so that each run of the window is one straight loop.
        let settled = self.window(home).find_map(|(i, slot)| {
            // SeqCst: a read of the claim protocol (module docs).
            let word = slot.load(Ordering::SeqCst);
            if slot::fingerprint(word) == fp {
                return Some(slot::is_live(word).then_some((i, slot::tat(word))));
            }
            (word == EMPTY).then_some(None)
        });
        settled.flatten()
    }

    /// The slow path of [`spend`](Self::spend): the key was not found live. Scans again,
    /// noting room and helping a pending insert of the key, then inserts it if still absent.
    #[cold]
    #[inline(never)]
    fn find_or_insert(&self, home: usize, req: &Request<'_>) -> Step {
        match self.find(home, req) {
            Found::Mine(outcome) => Step::Mine(outcome),
            Found::Live(i, tat) => Step::Live(i, tat),
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

    /// The CAS loop of one bucket, as in [`Bucket::spend`](crate::bucket), with the
    /// fingerprint in the compared word. `None` if the slot no longer holds the key.
    #[inline]
    fn spend_in(&self, slot: &AtomicU128, mut current: u64, req: &Request<'_>) -> Option<Outcome> {
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
    pub(super) fn find(&self, home: usize, req: &Request<'_>) -> Found {
        'restart: loop {
            let mut room = Room::default();
            for (i, slot) in self.window(home) {
                // SeqCst: a read of the claim protocol (module docs).
                let word = slot.load(Ordering::SeqCst);
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

    /// The TAT of the bucket of `fp`, if it has one. Creates and helps nothing.
    pub(crate) fn tat_of(&self, fp: u64) -> Option<u64> {
        self.lookup(self.home(fp), fp).map(|(_, tat)| tat)
    }

    /// Rewrites the TAT of the live bucket of `fp` to `f(TAT)` (`None`: leave it), by a CAS
    /// of the whole word, retried with the TAT it finds: a bucket that was evicted or whose
    /// slot went to another key is never touched, and an absent key is left alone. Returns
    /// whether a write happened.
    pub(crate) fn rewrite(&self, fp: u64, mut f: impl FnMut(u64) -> Option<u64>) -> bool {
        let home = self.home(fp);
        while let Some((i, mut tat)) = self.lookup(home, fp) {
            let slot = self.at(home, i);
            loop {
                let Some(new) = f(tat).filter(|&new| new != PENDING_TAT && new != tat) else {
                    return false;
                };
                // Relaxed on both arms: as for a spend, the fingerprint is compared by this
                // same CAS and the word publishes no other memory (module docs).
                match slot.compare_exchange(
                    slot::pack(fp, tat),
                    slot::pack(fp, new),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return true,
                    Err(actual) if slot::fingerprint(actual) == fp && slot::is_live(actual) => {
                        tat = slot::tat(actual);
                    }
                    Err(_) => break, // evicted or reused meanwhile: look up again
                }
            }
        }
        false
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
                // SeqCst: as the real eviction; the step broken here is the plain store.
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
