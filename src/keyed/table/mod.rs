//! The keyed table: a fixed array of two-word slots ([`slot`]), linear probing within a
//! bounded [`window`], and the look-up, spend, rewrite and eviction on it; inserts are in
//! [`claim`], removal steps in [`upkeep`]. Layout, the invariants the code cites by number,
//! and the spend: docs/design.md §6.2 and §6.3.
//!
//! The functions of a keyed check that do work are `#[inline(always)]`, each naming its row:
//! with `#[inline]` the optimiser keeps one or another out of line in a user's crate, and the
//! call costs a check more than the work it calls.

mod claim;
pub(crate) mod huge_pages;
mod lookup;
#[cfg(all(test, not(loom)))]
mod lookup_tests;
pub(crate) mod loom_hooks;
#[cfg(all(test, loom))]
mod loom_tests;
pub(crate) mod memory;
mod prefetch;
mod request;
mod seen;
pub(crate) mod slot;
mod upkeep;
#[cfg(all(test, not(loom)))]
mod upkeep_tests;
mod window;

pub(crate) use claim::Overflow;
pub(crate) use request::{Outcome, Request};

use super::stats::Counters;
use crate::engine::gcra::{Booking, IMPOSSIBLE_AHEAD};
use crate::engine::give_back::{self, Ledger, Receipt, TenureWord};
use crate::hint::cold_path;
use crate::outcome::Denied;
use crate::quota::Quota;
use crate::sync::{AtomicU64, Ordering};
use alloc::boxed::Box;
use claim::{Insert, Step};
use crossbeam_utils::CachePadded;
use lookup::{lookup, lookup_settled};
use loom_hooks::Faults;
use memory::SlotArray;
use request::{decide, initial_of, initial_tat};
use seen::Seen;
use slot::{tag_of, KeyWord, Slot, FROZEN, UNPUBLISHED};
use window::Slots;

/// How many ledgers of give-backs a table keeps, chosen by fingerprint: a give-back to one
/// bucket makes the bounds of the others on its ledger less tight, never wrong.
const LEDGERS: usize = 64;

/// A fixed-capacity table of buckets keyed by 64-bit fingerprints.
pub(crate) struct Table {
    pub(crate) slots: Slots,
    overflow: Overflow,
    pub(crate) counters: Counters,
    /// Whether the kernel accepted the advice to back the slots with huge pages.
    pub(crate) huge_pages: bool,
    /// The credit given back to the buckets, by fingerprint (`give_back.rs`).
    ledgers: Box<[CachePadded<Ledger>]>,
    /// The limiter's id, unique in the process (what a detached reservation is checked
    /// against).
    pub(crate) origin: u64,
    /// In a table whose new keys start empty, the keys removed while full (`seen.rs`).
    seen: Option<Seen>,
    /// The latest time at which a bucket was removed as idle: no new bucket starts before it
    /// (`request::initial_of`).
    floor: CachePadded<AtomicU64>,
}

impl Table {
    /// A table of `slots` EMPTY slots (at least 1) searched `window` slots from home, with the
    /// loom twins' broken step `faults` (`Faults::NONE` outside them).
    pub(crate) fn new(
        slots: SlotArray,
        window: usize,
        overflow: Overflow,
        start_empty: bool,
        faults: Faults,
    ) -> Table {
        let seen = start_empty.then(|| Seen::new(slots.len()));
        Table {
            seen,
            floor: CachePadded::new(AtomicU64::new(0)),
            slots: Slots::new(slots, window, faults),
            overflow,
            counters: Counters::default(),
            huge_pages: false,
            ledgers: (0..LEDGERS)
                .map(|_| CachePadded::new(Ledger::new()))
                .collect(),
            origin: crate::sync::next_id(),
        }
    }

    fn ledger(&self, fp: u64) -> &Ledger {
        &self.ledgers[(fp >> 32) as usize % LEDGERS]
    }

    pub(crate) fn slot_count(&self) -> usize {
        self.slots.as_slice().len()
    }

    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    pub(crate) fn home(&self, fp: u64) -> usize {
        self.slots.home(fp)
    }

    /// Starts fetching the first two cache lines of the window of `fp`, for a check of it a
    /// little later ([`batch`](super::batch)); at full load a key is often past home's line.
    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    pub(crate) fn prefetch_home(&self, fp: u64) {
        let (slots, home) = (self.slots.as_slice(), self.home(fp));
        prefetch::prefetch(&slots[home]);
        prefetch::prefetch(&slots[(home + 4).min(slots.len() - 1)]);
    }

    /// Starts fetching the cache line after home's, for a single check, so that its miss
    /// overlaps home's (docs/design.md §6.3). Without a branch: which keys spill over is
    /// random, and a mispredicted test of it would cost more than the fetch.
    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    fn prefetch_next_line(&self, home: usize) {
        let slots = self.slots.as_slice();
        let off = (self.slots.line_phase + home) % window::LINE;
        if let Some(next) = slots.get(home + window::LINE - off) {
            prefetch::prefetch(next);
        }
    }

    /// The insert path, for a key not found live.
    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    fn insert(&self) -> Insert<'_> {
        Insert {
            slots: &self.slots,
            counters: &self.counters,
            overflow: self.overflow,
            seen: self.seen.as_ref(),
            floor: &self.floor,
        }
    }

    /// Spends `req.cost` at `req.now` from the bucket of `req.fp`, creating the bucket if it
    /// is absent and the decision changes it. Inlined, with [`lookup`], into the check: out of
    /// line, the request, the slot found and the outcome went through the stack.
    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    pub(crate) fn spend(&self, req: &Request<'_>) -> Outcome {
        let home = self.home(req.fp);
        self.prefetch_next_line(home);
        let tag = tag_of(req.fp);
        loop {
            let (slot, k, w) = match lookup(&self.slots, home, tag) {
                Some(found) => found,
                // By value: a cold call that took the request's address would keep it in
                // memory (six stores) on every check.
                None => match self.insert().find_or_insert(home, *req) {
                    Step::Mine(outcome) => return outcome,
                    Step::Live((i, k, w)) => (self.slots.at(home, i), k, w),
                    Step::Restart => continue,
                },
            };
            if let Some(outcome) = self.spend_in(slot, k, w, req) {
                return outcome;
            }
        }
    }

    /// The CAS loop of one bucket on W masked by K; an UNPUBLISHED bucket is published with
    /// this request applied to a new bucket's TAT. `None` if the slot no longer holds the
    /// key's bucket. Inlined: out of line, the request and outcome went through memory, and a
    /// check's stores must all reach the cache before its locked compare-and-swap runs.
    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    fn spend_in(&self, slot: &Slot, k: KeyWord, mut w: u64, req: &Request<'_>) -> Option<Outcome> {
        let mask = self.slots.mask(k);
        loop {
            let tat = w ^ mask;
            if tat == FROZEN {
                cold_path(); // being removed
                return None;
            }
            let publish = tat == UNPUBLISHED;
            let (new, outcome) = decide(
                if publish {
                    initial_of(self.seen.as_ref(), &self.floor, req)
                } else {
                    tat
                },
                req,
            );
            if new == tat {
                return Some(outcome); // a denial or a peek: nothing to store
            }
            match slot.tat.spend(w, new ^ mask) {
                Ok(_) => {
                    if publish {
                        self.counters.key_added();
                    }
                    return Some(outcome.map(|(spent, booking)| (spent.in_tenure(k), booking)));
                }
                Err(actual) if slot.key.load() == k => {
                    cold_path(); // another writer's spend came in between
                    w = actual;
                }
                Err(_) => return None, // removed, or the slot went to another key
            }
        }
    }

    /// [`spend`](Self::spend) for a booking that may be given back: its receipt, with the
    /// ledger read before the spend (`give_back.rs`).
    #[inline]
    pub(crate) fn book(&self, req: &Request<'_>) -> Result<(Receipt, Booking), Denied> {
        let given = self.ledger(req.fp).snapshot();
        let (spent, booking) = self.spend(req)?;
        let receipt = Receipt {
            tenure: spent.tenure,
            before: spent.change.before,
            after: spent.change.after,
            given,
            cost: req.cost,
        };
        Ok((receipt, booking))
    }

    /// Gives back `tokens` of the booking `receipt` of the key `fp` under `quota`: nothing once
    /// the bucket it was made in is gone, even if the key has one again (docs/design.md §6.5).
    pub(crate) fn give_back(
        &self,
        fp: u64,
        receipt: &Receipt,
        tokens: u32,
        quota: &Quota,
        now: &dyn Fn() -> u64,
    ) -> u64 {
        let Some((slot, k, _)) = lookup_settled(&self.slots, self.home(fp), tag_of(fp)) else {
            return 0;
        };
        if k.raw() != receipt.tenure && !self.slots.faults.skips_tenure_check() {
            return 0;
        }
        let word = SlotTenure {
            slot,
            k,
            mask: self.slots.mask(k),
        };
        give_back::give_back(&word, self.ledger(fp), receipt, tokens, quota, now)
    }

    /// The TAT of the bucket of `fp`, if it has a published one. Creates and helps nothing.
    pub(crate) fn tat_of(&self, fp: u64) -> Option<u64> {
        let (_, k, w) = lookup_settled(&self.slots, self.home(fp), tag_of(fp))?;
        let tat = w ^ self.slots.mask(k);
        (tat != UNPUBLISHED).then_some(tat)
    }

    /// Removes every published bucket that is full at `now`; returns how many. A bucket more
    /// than [`IMPOSSIBLE_AHEAD`] ahead, which no operation wrote, is removed too, uncounted
    /// (docs/design.md §6.7).
    pub(crate) fn evict_idle(&self, now: u64) -> usize {
        // Before any freeze: see `request::initial_of`. Relaxed, for the reason given there.
        if !self.slots.faults.ignores_floor() {
            self.floor.fetch_max(now, Ordering::Relaxed);
        }
        let mut removed = 0;
        for slot in self.slots.as_slice() {
            let k = slot.key.load();
            if !k.holds_key() {
                continue;
            }
            let Some(w) = slot.read_in_tenure(k) else {
                continue;
            };
            let tat = w ^ self.slots.mask(k);
            if tat == FROZEN {
                upkeep::retire(&self.slots, slot, k); // a removal that stopped after its first step
                continue;
            }
            let idle = tat <= now && tat != UNPUBLISHED;
            let junk = tat > now.saturating_add(IMPOSSIBLE_AHEAD) && tat != UNPUBLISHED;
            if idle {
                // Before the freeze, which an insert of the key sees first (`seen.rs`).
                if let Some(seen) = &self.seen {
                    seen.mark(k.tag());
                }
            }
            if (idle || junk) && upkeep::freeze(&self.slots, slot, k, w) {
                if idle {
                    self.counters.key_removed();
                    removed += 1;
                }
                upkeep::retire(&self.slots, slot, k);
            }
        }
        removed
    }

    /// Spends `tokens` more unconditionally for the key `fp` at `now` under `quota`, creating
    /// its bucket if absent; refused, charging nothing, only when there is no room for it.
    pub(crate) fn force(
        &self,
        fp: u64,
        tokens: u32,
        now: u64,
        quota: &Quota,
        start_empty: bool,
    ) -> Result<(), Denied> {
        self.spend(&Request {
            fp,
            now,
            cost: tokens,
            quota,
            start_empty,
            max_wait_ns: 0,
            force: true,
        })
        .map(|_| ())
    }

    /// The TAT of the bucket of `fp` at `now`, or the one it would start from if absent.
    pub(crate) fn tat_or_new(&self, fp: u64, now: u64, quota: &Quota, start_empty: bool) -> u64 {
        self.tat_of(fp).unwrap_or_else(|| {
            let returning = self.seen.as_ref().is_some_and(|s| s.holds(tag_of(fp)));
            // Relaxed: see `request::initial_of`.
            let floor = self.floor.load(Ordering::Relaxed);
            initial_tat(start_empty && !returning, now, quota).max(floor)
        })
    }
}

/// The bucket of one tenure of a slot (K `k`), as a give-back acts on it.
struct SlotTenure<'a> {
    slot: &'a Slot,
    k: KeyWord,
    mask: u64,
}

impl SlotTenure<'_> {
    /// The TAT of the raw W `w`, if the slot still holds the tenure and its bucket is
    /// published and not being removed.
    fn decode(&self, w: u64) -> Option<u64> {
        let tat = w ^ self.mask;
        (self.slot.key.load() == self.k && tat != FROZEN && tat != UNPUBLISHED).then_some(tat)
    }
}

impl TenureWord for SlotTenure<'_> {
    fn load(&self) -> Option<u64> {
        // W's loads are at least Acquire (`slot.rs`), and K is read after.
        self.decode(self.slot.tat.load())
    }

    fn swap(&self, current: u64, new: u64) -> Result<(), Option<u64>> {
        // Release on success and Acquire on failure (`slot.rs`).
        match self.slot.tat.spend(current ^ self.mask, new ^ self.mask) {
            Ok(_) => Ok(()),
            Err(w) => Err(self.decode(w)),
        }
    }
}
