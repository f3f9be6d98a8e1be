//! The keyed table: a fixed array of two-word slots (see [`slot`]), linear probing within a
//! bounded window (see [`window`]), and the look-up, spend, rewrite and eviction on it.
//! Inserting a new key is in [`claim`]; the steps of removing a bucket are in [`upkeep`].
//!
//! # Layout
//! A key's *home* is its fingerprint scaled onto the slot count. Its *window* is the `window`
//! slots from home on, wrapping at the end. The table never grows, so there is no migration
//! step that could lose an update.
//!
//! # Invariants
//! 1. A slot is never EMPTY again once used: removal writes TOMBSTONE.
//! 2. A key is claimed only in a scan that saw every earlier slot of its window non-EMPTY, so
//!    a key (pending or live) at window position `p` has no EMPTY slot before `p` in its
//!    window. A scan may therefore stop at the first EMPTY slot.
//! 3. At most one LIVE, unfrozen slot holds a tag at any time (the claim protocol).
//! 4. Every write of W is a compare-and-swap whose expected value was read in the tenure it
//!    writes for (with K read again after it and unchanged), and writes that tenure's masked
//!    values. A tenure ends only by freezing W (a LIVE bucket) or retracting K (a claim).
//!
//! # A spend
//! Load K; if it is the key's and LIVE, load W, then load K again: unchanged, so W is of this
//! tenure, and `W ^ mask(K)` is the TAT. Decide, then CAS W from the value read to the new TAT
//! masked. The CAS fails if anything moved W: another spend (retry with the TAT it found, after
//! checking K again), a freeze (look the key up again), or a later tenure (its values are
//! masked differently, so they never equal the value expected). This is one 8-byte
//! compare-and-swap: a single 16-byte word of key and TAT would need `cmpxchg16b`, which stops
//! the processor from overlapping the cache misses of consecutive checks (see the
//! `keyed_floor` group of `benches/keyed`).
//!
//! The memory orderings are those of the slot words' methods ([`slot`]), each with its reason.
//! The protocol in full, with the proofs of the invariants, is in docs/design.md.

mod claim;
pub(crate) mod huge_pages;
mod lookup;
#[cfg(all(test, not(loom)))]
mod lookup_tests;
pub(crate) mod loom_hooks;
mod prefetch;
mod request;
#[cfg(all(test, not(loom)))]
mod rewrite_tests;
pub(crate) mod slot;
pub(crate) mod test_hooks;
mod upkeep;
#[cfg(all(test, not(loom)))]
mod upkeep_tests;
mod window;

pub(crate) use claim::Overflow;
pub(crate) use request::{initial_tat, Outcome, Request};

use super::stats::Counters;
use crate::gcra::IMPOSSIBLE_AHEAD;
use alloc::boxed::Box;
use claim::{Insert, Step};
use lookup::{lookup, lookup_settled};
use loom_hooks::Faults;
use request::decide;
use slot::{tag_of, KeyWord, Slot, FROZEN, UNPUBLISHED};
use window::Slots;

/// A fixed-capacity table of buckets keyed by 64-bit fingerprints.
pub(crate) struct Table {
    pub(crate) slots: Slots,
    overflow: Overflow,
    pub(crate) counters: Counters,
    /// Whether the kernel accepted the advice to back the slots with huge pages.
    pub(crate) huge_pages: bool,
}

impl Table {
    /// A table of `slots` EMPTY slots (at least 1) searched `window` slots from home, with the
    /// loom twins' broken step `faults` (none outside loom).
    pub(crate) fn new(
        slots: Box<[Slot]>,
        window: usize,
        overflow: Overflow,
        faults: Faults,
    ) -> Table {
        Table {
            slots: Slots::new(slots, window, faults),
            overflow,
            counters: Counters::default(),
            huge_pages: false,
        }
    }

    /// The number of slots.
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.as_slice().len()
    }

    /// The home index of a fingerprint.
    #[inline(always)]
    pub(crate) fn home(&self, fp: u64) -> usize {
        self.slots.home(fp)
    }

    /// Starts fetching the first two cache lines of the window of `fp`, for a check of it a
    /// little later (see [`batch`](super::batch)). A line holds 4 slots, and at full load a
    /// key is often a slot or more past its home, so the second line is fetched too (see the
    /// `keyed_batch` group of `benches/keyed`).
    #[inline(always)]
    pub(crate) fn prefetch_home(&self, fp: u64) {
        let (slots, home) = (self.slots.as_slice(), self.home(fp));
        prefetch::prefetch(&slots[home]);
        prefetch::prefetch(&slots[(home + 4).min(slots.len() - 1)]);
    }

    /// Starts fetching the cache line after home's, for a single check. At full load a
    /// fifth of keys lie past home's line, and the look-up learns that only once home's
    /// line has arrived: in a table larger than the caches, fetching the next line then
    /// would put a second miss after the first, while fetched now the two overlap (see
    /// `keyed_paired`). Without a branch: which keys spill over is random, and a mispredicted
    /// test of it would cost more than the fetch.
    #[inline(always)]
    fn prefetch_next_line(&self, home: usize) {
        let slots = self.slots.as_slice();
        let off = (self.slots.line_phase + home) % window::LINE;
        if let Some(next) = slots.get(home + window::LINE - off) {
            prefetch::prefetch(next);
        }
    }

    /// The insert path, for a key not found live.
    #[inline(always)]
    fn insert(&self) -> Insert<'_> {
        Insert {
            slots: &self.slots,
            counters: &self.counters,
            overflow: self.overflow,
        }
    }

    /// Spends `req.cost` at `req.now` from the bucket of `req.fp`, creating the bucket if it
    /// is absent and the decision changes it. Inlined, with [`lookup`], into the check: out of
    /// line, the request, the slot found and the outcome went through the stack.
    #[inline(always)]
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

    /// The CAS loop of one bucket, as in [`Bucket::spend`](crate::bucket), on W masked by K.
    /// An UNPUBLISHED bucket is published with this request applied to a new bucket's TAT.
    /// `None` if the slot no longer holds the key's bucket: look it up again. Inlined into
    /// [`spend`](Self::spend): out of line, the request went to it through memory and its
    /// outcome came back through memory, and a check's stores must all reach the cache before
    /// its locked compare-and-swap runs.
    #[inline(always)]
    fn spend_in(&self, slot: &Slot, k: KeyWord, mut w: u64, req: &Request<'_>) -> Option<Outcome> {
        let mask = self.slots.mask(k);
        loop {
            let tat = w ^ mask;
            if tat == FROZEN {
                return None;
            }
            let publish = tat == UNPUBLISHED;
            let (new, outcome) = decide(if publish { req.initial() } else { tat }, req);
            if new == tat {
                return Some(outcome); // a denial or a peek: nothing to store
            }
            test_hooks::pause();
            match slot.tat.spend(w, new ^ mask) {
                Ok(_) => {
                    if publish {
                        self.counters.key_added();
                    }
                    return Some(outcome);
                }
                Err(actual) if slot.key.load() == k => w = actual,
                Err(_) => return None, // removed, or the slot went to another key
            }
        }
    }

    /// The TAT of the bucket of `fp`, if it has a published one. Creates and helps nothing.
    pub(crate) fn tat_of(&self, fp: u64) -> Option<u64> {
        let (_, k, w) = lookup_settled(&self.slots, self.home(fp), tag_of(fp))?;
        let tat = w ^ self.slots.mask(k);
        (tat != UNPUBLISHED).then_some(tat)
    }

    /// Rewrites the TAT of the published bucket of `fp` to `f(TAT)` (`None`: leave it), by a
    /// CAS of W retried with the TAT it finds: a bucket that was removed or whose slot went to
    /// another key is never touched, and an absent key is left alone. Returns whether a write
    /// happened.
    pub(crate) fn rewrite(&self, fp: u64, mut f: impl FnMut(u64) -> Option<u64>) -> bool {
        let home = self.home(fp);
        while let Some((slot, k, mut w)) = lookup_settled(&self.slots, home, tag_of(fp)) {
            let mask = self.slots.mask(k);
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
                test_hooks::pause();
                match slot.tat.spend(w, new ^ mask) {
                    Ok(_) => return true,
                    Err(actual) if slot.key.load() == k => w = actual,
                    Err(_) => break, // removed or reused meanwhile: look up again
                }
            }
        }
        false
    }

    /// Removes every bucket that is full at `now` (`TAT <= now`); returns how many. A removal
    /// freezes W, then retires K (see [`upkeep`]). A bucket not yet published holds nothing to
    /// remove, whatever `now`. A bucket whose TAT no operation could have written by `now`
    /// (more than [`IMPOSSIBLE_AHEAD`] ahead) is the junk of a tenure made LIVE by a thread
    /// stalled through a whole cycle of generations (see [`upkeep`], *A stalled thread*): it
    /// is removed too, uncounted, as it was never published.
    pub(crate) fn evict_idle(&self, now: u64) -> usize {
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
            if (idle || junk) && upkeep::freeze(&self.slots, slot, k, w) {
                if idle {
                    self.counters.key_removed();
                    removed += 1;
                }
                test_hooks::pause(); // between the freeze and the retirement
                upkeep::retire(&self.slots, slot, k);
            }
        }
        removed
    }

    /// How many slots hold a claim or an unfrozen bucket of `fp`. For the loom models, which
    /// call it at rest.
    #[cfg(loom)]
    pub(crate) fn slots_holding(&self, fp: u64) -> usize {
        let tag = tag_of(fp);
        let held = |s: &Slot| {
            let k = s.key.load();
            k.tag() == tag && (k.is_pending() || self.slots.read_live(s, k).is_some())
        };
        self.slots.as_slice().iter().filter(|s| held(s)).count()
    }
}
