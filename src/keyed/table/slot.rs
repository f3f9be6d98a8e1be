//! One slot of the keyed table: the key word K and the TAT word W, typed ([`KeyWord`],
//! [`AtomicKeyWord`], [`AtomicTatWord`]) so that each operation's memory ordering and its
//! reason live in one method. The layout of K, the masking of W and the two reserved TATs:
//! docs/design.md §6.1 (a unit test below holds the text to the constants).

use crate::sync::{Ordering, SlotWord};

/// A slot: the key word and the TAT word, in one 16-byte-aligned pair so that both are in the
/// same cache line.
#[repr(C, align(16))]
pub(crate) struct Slot {
    /// K: tag, generation and PENDING bit.
    pub(crate) key: AtomicKeyWord,
    /// W: the TAT, masked by K.
    pub(crate) tat: AtomicTatWord,
}

const TOMBSTONE_TAG: u64 = 1;
const PENDING: u64 = 1;
const TAG_SHIFT: u32 = 26;
/// Bits of the generation. The crate's own tests build with 12, so that they can drive a slot
/// through a whole cycle of generations in a few thousand claims (docs/design.md §6.7).
#[cfg(not(test))]
pub(crate) const GENERATION_BITS: u32 = TAG_SHIFT - 1;
#[cfg(test)]
pub(crate) const GENERATION_BITS: u32 = 12;
/// The generation field of K, in place.
const GENERATION: u64 = ((1 << GENERATION_BITS) - 1) << 1;
/// Bits of a fingerprint kept in K: 38.
pub(crate) const TAG_BITS: u32 = 64 - TAG_SHIFT;

/// The TAT of a LIVE bucket whose first spend is not applied yet. A spend never stores it.
pub(crate) const UNPUBLISHED: u64 = u64::MAX;
/// The TAT of a bucket being removed. A spend never stores it.
pub(crate) const FROZEN: u64 = u64::MAX - 1;

/// The tag of a fingerprint: its low 38 bits, moved off the two reserved tags. The home slot
/// comes from the high bits, so keys in one window rarely share high bits and the tag's bits
/// are the ones that tell them apart.
#[inline]
pub(crate) const fn tag_of(fingerprint: u64) -> u64 {
    let tag = fingerprint & ((1 << TAG_BITS) - 1);
    if tag <= TOMBSTONE_TAG {
        tag + 2
    } else {
        tag
    }
}

/// A value of K.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct KeyWord(u64);

impl KeyWord {
    /// K of a never-used slot.
    pub(crate) const EMPTY: KeyWord = KeyWord(0);

    /// The word itself: what a booking's receipt records as the bucket's tenure.
    #[inline]
    pub(crate) const fn raw(self) -> u64 {
        self.0
    }

    #[inline]
    pub(crate) const fn tag(self) -> u64 {
        self.0 >> TAG_SHIFT
    }

    /// Whether K holds a key (PENDING or LIVE).
    #[inline]
    pub(crate) const fn holds_key(self) -> bool {
        self.tag() > TOMBSTONE_TAG
    }

    #[inline]
    pub(crate) const fn is_pending(self) -> bool {
        self.0 & PENDING != 0
    }

    #[cfg(all(test, not(loom)))]
    const fn is_tombstone(self) -> bool {
        self.tag() == TOMBSTONE_TAG
    }

    /// The TOMBSTONE that ends this tenure (same generation).
    #[inline]
    pub(crate) const fn tombstone(self) -> KeyWord {
        KeyWord((TOMBSTONE_TAG << TAG_SHIFT) | (self.0 & GENERATION))
    }

    /// K of a claim for `tag` of a slot whose K is this one: the next generation, PENDING.
    #[inline]
    pub(crate) const fn claim(self, tag: u64) -> KeyWord {
        let generation = (self.0 & GENERATION).wrapping_add(2) & GENERATION;
        KeyWord((tag << TAG_SHIFT) | generation | PENDING)
    }

    /// The LIVE K of a claim (the same tag and generation).
    #[inline]
    pub(crate) const fn live(self) -> KeyWord {
        KeyWord(self.0 & !PENDING)
    }

    /// The mask of W under this LIVE K: a multiply-xorshift mix, so that tenures of one slot
    /// (other generation or tag) have unrelated masks. The tags come from a keyed pseudorandom
    /// function under a secret random key (see [`fingerprint`](crate::FingerprintHash)), so a
    /// client cannot steer two masks together.
    #[inline]
    pub(crate) const fn mask(self) -> u64 {
        let x = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^ (x >> 29)
    }
}

/// The atomic K of a slot. Every operation on it is `SeqCst`: the argument that a key never has
/// two live buckets orders reads and writes of K in *different* slots, which only the single
/// total order of `SeqCst` operations does (docs/design.md).
#[repr(transparent)]
pub(crate) struct AtomicKeyWord(SlotWord);

impl AtomicKeyWord {
    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    pub(crate) fn load(&self) -> KeyWord {
        // SeqCst: see the type.
        KeyWord(self.0.load(Ordering::SeqCst))
    }

    /// K from `current` to `new` (a claim, retraction, making LIVE or retirement); the K found
    /// if it was not `current`.
    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    pub(crate) fn compare_exchange(
        &self,
        current: KeyWord,
        new: KeyWord,
    ) -> Result<KeyWord, KeyWord> {
        // SeqCst on both arms: see the type.
        let result = self
            .0
            .compare_exchange(current.0, new.0, Ordering::SeqCst, Ordering::SeqCst);
        result.map(KeyWord).map_err(KeyWord)
    }
}

/// The atomic W of a slot: the TAT masked by K. Its loads are `SeqCst` and so at
/// least `Acquire`: with the `Release` of [`spend`](Self::spend), whoever reads a value of W and
/// then K sees the K of that value's tenure or a later one, the rule every decode of W rests on.
#[repr(transparent)]
pub(crate) struct AtomicTatWord(SlotWord);

impl AtomicTatWord {
    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    pub(crate) fn load(&self) -> u64 {
        // SeqCst: at least Acquire (see the type), and in the total order of the protocol's
        // steps, with which the initialisation and freezes of W are ordered. On x86_64 it is
        // the same instruction as a relaxed load.
        self.0.load(Ordering::SeqCst)
    }

    /// A spend, publish or rewrite of the TAT: W from `current` to `new`; the W found if it was
    /// not `current`.
    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    pub(crate) fn spend(&self, current: u64, new: u64) -> Result<u64, u64> {
        // Release on success: a helper that reads this value and then K must see K LIVE, not
        // the claim before it, or it would take a publish for junk and overwrite it. Acquire on
        // failure: the value found is read as a load of W is (see the type). Every write of W
        // is a compare-and-swap, so each continues the release sequence of the ones before it.
        self.0
            .compare_exchange(current, new, Ordering::Release, Ordering::Acquire)
    }

    /// A step of the insert or removal protocol (the initialisation of a claim's W, a freeze):
    /// W from `current` to `new`; the W found if it was not `current`.
    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    pub(crate) fn compare_exchange(&self, current: u64, new: u64) -> Result<u64, u64> {
        // SeqCst on both arms: these steps are ordered with the operations on K of other slots
        // (docs/design.md), as every operation on K is.
        self.0
            .compare_exchange(current, new, Ordering::SeqCst, Ordering::SeqCst)
    }
}

impl Slot {
    /// An EMPTY slot built from its words (loom's stand-in atomics cannot be zero-initialised).
    #[cfg(loom)]
    pub(crate) fn loom_empty() -> Slot {
        Slot {
            key: AtomicKeyWord(SlotWord::new(0)),
            tat: AtomicTatWord(SlotWord::new(0)),
        }
    }

    /// W read in the tenure of the LIVE K `k` (frozen or not), if the slot still holds `k`
    /// after the read: K unchanged after W was read means that W was read in K's tenure.
    /// `None` for a PENDING `k`.
    #[inline(always)] // BENCHMARKS.md, "Keyed, paired"
    pub(crate) fn read_in_tenure(&self, k: KeyWord) -> Option<u64> {
        if k.is_pending() {
            return None;
        }
        let w = self.tat.load();
        (self.key.load() == k).then_some(w)
    }
}

#[cfg(all(test, not(loom)))]
#[path = "slot_tests.rs"]
mod tests;
