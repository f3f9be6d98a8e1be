//! The keyed table: a fixed array of two-word slots (see [`slot`](super::slot)), linear probing
//! within a bounded window, and the look-up and spend on it. Inserting a new key is in
//! [`claim`](super::claim); eviction and rewrites are in [`upkeep`](super::upkeep).
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
//! 3. At most one LIVE, unfrozen slot holds a tag at any time (the claim protocol).
//! 4. Every write of W is a compare-and-swap whose expected value was read in the tenure it
//!    writes for (with K read again after it and unchanged), and writes that tenure's masked
//!    values. A tenure ends only by freezing W (a LIVE bucket) or retracting K (a claim).
//!
//! # A spend
//! Load K; if it is the key's and LIVE, load W, then load K again: unchanged, so W is of this
//! tenure, and `W ^ mask(K)` is the TAT. Decide, then CAS W from the value read to the new TAT
//! masked. The CAS fails if anything moved W: another spend (retry with the TAT it found, after
//! checking K again), a freeze (the key is being removed: look it up again), or a later tenure
//! (its values are masked differently, so they never equal the value expected). This is one
//! 8-byte compare-and-swap, where a single 16-byte word of key and TAT needed `cmpxchg16b`,
//! which stops the CPU from overlapping the cache misses of consecutive checks.
//!
//! # Orderings
//! Every write of K (claim, retract, make LIVE, remove) and every read of a scan is `SeqCst`:
//! the claim protocol's argument is about two different slots, which weaker orderings do not
//! order (see [`claim`](super::claim)). The initialisation of W and a freeze are `SeqCst`
//! compare-and-swaps for the same reason. A spend's CAS of W (a publish is one) is `Release`
//! when it succeeds and `Acquire` when it fails. Together with the `SeqCst` (so at least
//! acquire) loads of W, this gives the rule every decode rests on: whoever reads a value of W
//! and then K sees the K of that value's tenure or a later one. Without `Release`, a helper
//! could read the publish of a new bucket and then still read K as PENDING (the publisher's
//! write of K LIVE not yet visible to it), take the published value for junk, and overwrite it.
//! Every write of W is a compare-and-swap, so each continues the release sequence of the ones
//! before it. On x86_64 a `SeqCst` load is the same instruction as a relaxed one.

mod claim;
pub(crate) mod huge_pages;
mod lookup;
#[cfg(all(test, not(loom)))]
mod lookup_tests;
mod prefetch;
mod request;
pub(crate) mod slot;
mod upkeep;
mod window;

pub(crate) use request::{initial_tat, Outcome, Request};

#[cfg(loom)]
use super::loom_hooks::Broken;
use super::stats::Counters;
use super::OverflowPolicy;
use crate::sync::Ordering;
use alloc::boxed::Box;
use claim::Step;
use request::decide;
use slot::{Slot, FROZEN, UNPUBLISHED};
use window::Window;

/// Slots per cache line (64 bytes of 16-byte slots).
#[cfg(not(loom))]
pub(super) const LINE: usize = 4;
/// Under loom one "line" of two slots (see [`lookup`](super::lookup)).
#[cfg(loom)]
pub(super) const LINE: usize = 2;

/// A found bucket: its window position, the K read, and the W read in the same tenure.
pub(super) type Held = (usize, u64, u64);

/// A fixed-capacity table of buckets keyed by 64-bit fingerprints.
pub(crate) struct Table {
    pub(super) slots: Box<[Slot]>,
    /// Where slot 0 sits in its cache line, in slots (the array is 16-byte aligned).
    pub(super) line_phase: usize,
    pub(super) window: usize,
    pub(super) policy: OverflowPolicy,
    pub(crate) counters: Counters,
    /// Whether the kernel accepted the advice to back the slots with huge pages.
    pub(crate) huge_pages: bool,
    #[cfg(loom)]
    pub(crate) broken: Broken,
}

impl Table {
    /// A table of `slots` EMPTY slots (at least 1) searched `window` slots from home.
    pub(crate) fn new(slots: Box<[Slot]>, window: usize, policy: OverflowPolicy) -> Table {
        let window = window.clamp(1, slots.len());
        // Under loom the slots are not memory words: phase 0, so that the two-slot models take
        // the grouped path of a look-up from slot 0.
        let line_phase = if cfg!(loom) {
            0
        } else {
            (slots.as_ptr() as usize / core::mem::size_of::<Slot>()) % LINE
        };
        Table {
            slots,
            line_phase,
            window,
            policy,
            counters: Counters::default(),
            huge_pages: false,
            #[cfg(loom)]
            broken: Broken::Nothing,
        }
    }

    /// Places slot 0 at `phase` slots into its cache line, as an allocation could: for the
    /// look-up test, which covers every phase.
    #[cfg(test)]
    pub(super) fn set_line_phase(&mut self, phase: usize) {
        self.line_phase = phase % LINE;
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
        prefetch::prefetch(&self.slots[home]);
        prefetch::prefetch(&self.slots[(home + 4).min(self.slots.len() - 1)]);
    }

    /// The slots of the window of `home` with their window positions, in probing order.
    #[inline(always)]
    pub(super) fn window(&self, home: usize) -> Window<'_> {
        window::window(&self.slots, home, self.window)
    }

    /// The slot at window position `i` from `home`, wrapping at the end of the array.
    #[inline(always)]
    pub(super) fn at(&self, home: usize, i: usize) -> &Slot {
        let j = home + i;
        let j = if j >= self.slots.len() {
            j - self.slots.len()
        } else {
            j
        };
        &self.slots[j]
    }

    /// The mask of W in the tenure of the LIVE K `k` (see [`slot`](super::slot)).
    #[inline(always)]
    pub(super) fn mask(&self, k: u64) -> u64 {
        #[cfg(loom)]
        if self.broken == Broken::UnmaskedTat {
            return 0;
        }
        slot::mask(k)
    }

    /// W read in the tenure of the LIVE K `k`, if the slot still holds `k` after the read
    /// and its bucket is not being removed. `None` for a PENDING `k`.
    #[inline(always)]
    pub(super) fn read_live(&self, slot: &Slot, k: u64) -> Option<u64> {
        if slot::is_pending(k) {
            return None;
        }
        // SeqCst, both: reads of the protocol (module docs). K unchanged after W was read
        // means that W was read in K's tenure.
        let w = slot.tat.load(Ordering::SeqCst);
        let unchanged = slot.key.load(Ordering::SeqCst) == k;
        (unchanged && w ^ self.mask(k) != FROZEN).then_some(w)
    }

    /// Spends `req.cost` at `req.now` from the bucket of `req.fp`, creating the bucket if it
    /// is absent and the decision changes it. Inlined, with [`lookup`](Self::lookup), into the
    /// check: out of line, the request, the slot found and the outcome went through the stack.
    #[inline(always)]
    pub(crate) fn spend(&self, req: &Request<'_>) -> Outcome {
        let home = self.home(req.fp);
        let tag = slot::tag_of(req.fp);
        loop {
            let (slot, k, w) = match self.lookup(home, tag) {
                Some(found) => found,
                // By value: a cold call that took the request's address would keep it in
                // memory (six stores) on every check.
                None => match self.find_or_insert(home, *req) {
                    Step::Mine(outcome) => return outcome,
                    Step::Live((i, k, w)) => (self.at(home, i), k, w),
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
    /// `None` if the slot no longer holds the key's bucket: look it up again.
    #[inline]
    pub(super) fn spend_in(
        &self,
        slot: &Slot,
        k: u64,
        mut w: u64,
        req: &Request<'_>,
    ) -> Option<Outcome> {
        let mask = self.mask(k);
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
            // Release on success and Acquire on failure: a value of W read with Acquire orders
            // the K read after it after the K writes before the value (module docs).
            match slot
                .tat
                .compare_exchange(w, new ^ mask, Ordering::Release, Ordering::Acquire)
            {
                Ok(_) => {
                    if publish {
                        self.counters.key_added();
                    }
                    return Some(outcome);
                }
                // SeqCst: a read of the protocol (module docs).
                Err(actual) if slot.key.load(Ordering::SeqCst) == k => w = actual,
                Err(_) => return None, // removed, or the slot went to another key
            }
        }
    }

    /// How many slots hold a claim or an unfrozen bucket of `fp`. For the loom models.
    #[cfg(loom)]
    pub(crate) fn slots_holding(&self, fp: u64) -> usize {
        let tag = slot::tag_of(fp);
        let held = |s: &Slot| {
            // SeqCst: as the reads of a scan (module docs); the models call this at rest.
            let k = s.key.load(Ordering::SeqCst);
            slot::tag(k) == tag && (slot::is_pending(k) || self.read_live(s, k).is_some())
        };
        self.slots.iter().filter(|s| held(s)).count()
    }
}
