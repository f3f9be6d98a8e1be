//! One slot of the keyed table: two 64-bit words, the key word K and the TAT word W, and the
//! zeroed allocation of the slot array. The words are typed: [`KeyWord`] for a value of K,
//! [`AtomicKeyWord`] and [`AtomicTatWord`] for the words themselves, whose methods carry the
//! memory ordering of each operation and its reason. The protocol on them is summarised in
//! [`table`](super) and [`claim`](super::claim), and set out in docs/design.md.
//!
//! # The key word K
//! | bits    | field                                                                  |
//! |---------|------------------------------------------------------------------------|
//! | 63..26  | tag: the low 38 bits of the key's fingerprint; 0 EMPTY, 1 TOMBSTONE     |
//! | 25..1   | generation: one more at each claim of the slot, so K never repeats soon |
//! | 0       | PENDING: claimed for the tag, not yet live                              |
//!
//! The generation repeats after 2^25 claims of one slot: at the fastest churn (two keys
//! evicting each other in a one-slot table) even a claim every 30 ns takes a second for that,
//! so only a thread stalled that long at one of a few steps could meet its K again
//! (docs/design.md, *Generations and the known limit*). The tag's 38 bits bound the chance that
//! a key is confused with another at `511 x 2^-37` (docs/design.md, *Fingerprints and
//! collisions*).
//!
//! | K                        | meaning                                                   |
//! |--------------------------|-----------------------------------------------------------|
//! | 0                        | EMPTY: never used. All-zero, so a zeroed page is a table of EMPTY slots |
//! | tag 1                    | TOMBSTONE: held a key once; free for reuse                |
//! | tag `x >= 2`, PENDING    | claimed for key `x`, being inserted                       |
//! | tag `x >= 2`, no PENDING | LIVE: the bucket of key `x` (one *tenure* of the slot)     |
//!
//! # The TAT word W
//! While K is LIVE, W holds the bucket's TAT *masked*: `tat ^ mask(K)`, where the mask is a
//! mix of K (tag and generation). Each tenure of a slot therefore writes values that no other
//! tenure writes, except by a 64-bit coincidence: a compare-and-swap of W that expects a value
//! read in one tenure fails in any other, as one 128-bit CAS of key and TAT together would. Two TATs are reserved:
//! - [`UNPUBLISHED`]: the bucket is LIVE but its first spend is not applied yet;
//! - [`FROZEN`]: the bucket is being removed; no spend may land in it any more.
//!
//! While K is EMPTY, TOMBSTONE or PENDING, W holds whatever an earlier tenure left (junk) until
//! the insert initialises it to the masked UNPUBLISHED.

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

/// The tag of a TOMBSTONE.
const TOMBSTONE_TAG: u64 = 1;
/// The PENDING bit of K.
const PENDING: u64 = 1;
/// Where the tag starts in K.
const TAG_SHIFT: u32 = 26;
/// Bits of the generation (module docs). The crate's own tests build with 12, so that they
/// can drive a slot through a whole cycle of generations in a few thousand claims and show
/// the guards against a stalled thread at work; the bits above them are then unused.
#[cfg(not(test))]
pub(crate) const GENERATION_BITS: u32 = TAG_SHIFT - 1;
#[cfg(test)]
pub(crate) const GENERATION_BITS: u32 = 12;
/// The generation field of K, in place.
const GENERATION: u64 = ((1 << GENERATION_BITS) - 1) << 1;
/// Bits of a fingerprint kept in K: 38 (module docs).
pub(crate) const TAG_BITS: u32 = 64 - TAG_SHIFT;

/// The TAT of a LIVE bucket whose first spend is not applied yet. A spend never stores it.
pub(crate) const UNPUBLISHED: u64 = u64::MAX;
/// The TAT of a bucket being removed. A spend never stores it. (The last two nanoseconds of the
/// clock, 584 years after its origin, are given up for these markers.)
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

/// A value of K (module docs).
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

    /// The tag.
    #[inline]
    pub(crate) const fn tag(self) -> u64 {
        self.0 >> TAG_SHIFT
    }

    /// Whether K holds a key (PENDING or LIVE).
    #[inline]
    pub(crate) const fn holds_key(self) -> bool {
        self.tag() > TOMBSTONE_TAG
    }

    /// Whether K is PENDING.
    #[inline]
    pub(crate) const fn is_pending(self) -> bool {
        self.0 & PENDING != 0
    }

    /// Whether K is a TOMBSTONE.
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
    /// K now.
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

/// The atomic W of a slot: the TAT masked by K (module docs). Its loads are `SeqCst` and so at
/// least `Acquire`: with the `Release` of [`spend`](Self::spend), whoever reads a value of W and
/// then K sees the K of that value's tenure or a later one, the rule every decode of W rests on.
#[repr(transparent)]
pub(crate) struct AtomicTatWord(SlotWord);

impl AtomicTatWord {
    /// W now.
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
mod tests {
    use super::*;

    const EMPTY: KeyWord = KeyWord::EMPTY;

    #[test]
    fn key_words_keep_their_fields_apart() {
        let claim = EMPTY.claim(tag_of(u64::MAX));
        assert!(claim.holds_key() && claim.is_pending());
        assert_eq!(claim.tag(), (1 << TAG_BITS) - 1);
        let bucket = claim.live();
        assert!(bucket.holds_key() && !bucket.is_pending());
        let removed = bucket.tombstone();
        assert!(removed.is_tombstone() && !removed.holds_key() && removed != EMPTY);
        // The next claim is a new generation, so its K differs from the first claim's.
        let again = removed.claim(claim.tag());
        assert_ne!(again, claim);
        assert_eq!(again.tag(), claim.tag());
    }

    #[test]
    fn generations_wrap_without_touching_tag_or_pending() {
        let mut k = EMPTY;
        for _ in 0..10_000 {
            let claim = k.claim(7);
            assert_eq!(claim.tag(), 7);
            assert!(claim.is_pending());
            k = claim.live().tombstone();
            assert!(k.is_tombstone());
        }
    }

    #[test]
    fn reserved_tags_are_never_a_key() {
        assert_eq!(tag_of(0), 2);
        assert_eq!(tag_of(1), 3);
        assert_eq!(tag_of(1 << TAG_BITS), 2);
        assert_eq!(tag_of(5), 5);
    }

    /// docs/design.md (6.1, 6.2, 6.6, 6.7) states these constants' values; a change of one
    /// must change the text too.
    #[test]
    fn the_design_states_the_layout_of_the_words() {
        let design = include_str!("../../../docs/design.md");
        assert_eq!((UNPUBLISHED, FROZEN), (u64::MAX, u64::MAX - 1));
        assert!(design.contains("UNPUBLISHED (`u64::MAX`:"));
        assert!(design.contains("FROZEN (`u64::MAX - 1`:"));
        let generation_bits = TAG_SHIFT - 1; // outside the crate's own tests (module docs)
        let tag = format!("| 63..{TAG_SHIFT} | tag: the low {TAG_BITS} bits");
        let generation = format!("| {}..1 | generation", TAG_SHIFT - 1);
        assert!(design.contains(&tag), "{tag}");
        assert!(design.contains(&generation), "{generation}");
        assert!(design.contains(&format!("({generation_bits} bits, 6.7)")));
        assert!(design.contains(&format!("after 2^{generation_bits} claims of one slot")));
        let window = crate::keyed::builder::WINDOW;
        assert!(design.contains(&format!("*window* is the {window} slots from home on")));
        assert!(design.contains(&format!("{} x 2^-{}", window - 1, TAG_BITS - 1)));
        let default_keys = crate::keyed::DEFAULT_MAX_KEYS.trailing_zeros();
        assert_eq!(crate::keyed::DEFAULT_MAX_KEYS, 1 << default_keys);
        assert!(design.contains(&format!("default `max_keys` 2^{default_keys}")));
    }

    #[test]
    fn masks_of_two_tenures_differ() {
        let first = EMPTY.claim(9).live();
        let second = first.tombstone().claim(9).live();
        assert_ne!(first.mask(), second.mask());
        assert_ne!(first.mask(), EMPTY.claim(10).live().mask());
    }
}
