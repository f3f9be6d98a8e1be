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
    let generation_bits = TAG_SHIFT - 1; // outside the crate's own tests
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
