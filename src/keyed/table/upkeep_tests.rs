//! The guards against a thread that stalls while a slot goes through a whole cycle of
//! generations (see [`upkeep`](super::upkeep), *A stalled thread*): the tests build with a
//! generation of [`GENERATION_BITS`] bits, so that a cycle is a few thousand claims. Each
//! guard is a read of W just before a CAS of K; a thread that stalls before it finds the slot's
//! present state.

use super::claim::{Overflow, Room, Step};
use super::loom_hooks::Faults;
use super::memory::zeroed_slots;
use super::request::Request;
use super::slot::{tag_of, KeyWord, Slot, GENERATION_BITS, UNPUBLISHED};
use super::upkeep::{freeze, retire};
use super::Table;
use crate::Quota;
use core::time::Duration;

const Y: u64 = 0x1234_5678_9abc_def0;
const Z: u64 = 0x0fed_cba9_8765_4321;

fn quota() -> Quota {
    Quota::try_new(Duration::from_secs(1), 2).unwrap()
}

/// One token of the key of fingerprint `fp`, at 0.
fn request(fp: u64, quota: &Quota) -> Request<'_> {
    Request::one_at_zero(fp, quota)
}

/// A table of one slot, whose new keys evict the bucket there.
fn one_slot() -> Table {
    Table::new(
        zeroed_slots(1).unwrap(),
        1,
        Overflow::EvictNearestNew,
        false,
        Faults::NONE,
    )
}

/// Slot 0 of `table` (EMPTY) made Y's LIVE bucket with W holding `tat`, as no insert would.
fn live_y_at(table: &Table, tat: u64) -> &Slot {
    let s = &table.slots.as_slice()[0];
    let live = KeyWord::EMPTY.claim(tag_of(Y)).live();
    s.key.compare_exchange(KeyWord::EMPTY, live).unwrap();
    s.tat.compare_exchange(0, tat ^ live.mask()).unwrap();
    s
}

/// A one-slot table where Y's bucket (one spend) was frozen, as by a thread that then
/// stalled, and the slot then went through a whole cycle of generations (Y and Z evicting
/// each other), so that Y is LIVE again with one spend under the same K. Returns the table and
/// that K.
fn wrapped(quota: &Quota) -> (Table, KeyWord) {
    let table = one_slot();
    let spend = |fp| table.spend(&request(fp, quota)).is_ok();
    assert!(spend(Y));
    let s = &table.slots.as_slice()[0];
    let (k0, w0) = (s.key.load(), s.tat.load());
    assert!(freeze(&table.slots, s, k0, w0));
    for _ in 0..1 << (GENERATION_BITS - 1) {
        assert!(spend(Z));
        assert!(spend(Y));
    }
    assert_eq!(s.key.load(), k0, "Y is LIVE again under the same K");
    (table, k0)
}

#[test]
fn a_stale_retire_after_the_generation_wraps_leaves_a_live_bucket_alone() {
    let quota = quota();
    let (table, k0) = wrapped(&quota);
    let s = &table.slots.as_slice()[0];
    retire(&table.slots, s, k0); // the stalled eviction wakes
    assert!(s.key.load().holds_key(), "Y's live bucket was retired");
    assert_eq!(table.tat_of(Y), Some(1_000_000_000), "Y keeps its spend");
}

#[test]
fn a_stale_claim_after_the_generation_wraps_leaves_a_live_bucket_alone() {
    let quota = quota();
    let (table, k0) = wrapped(&quota);
    // An insert that saw Y's bucket frozen, and stalled before claiming the slot, wakes.
    let room = Room {
        free: Some((0, k0)),
        ..Room::default()
    };
    let step = table
        .insert()
        .insert(0, &request(0x5555_aaaa_5555_aaaa, &quota), room);
    assert!(matches!(step, Ok(Step::Restart)), "the claim went ahead");
    assert_eq!(table.tat_of(Y), Some(1_000_000_000), "Y keeps its spend");
}

/// A resolver that initialised its claim and stalled before making it LIVE wakes when the slot
/// has come round to the same claim again, a new tenure whose W is not initialised yet (it
/// holds the last bucket's frozen W). Made LIVE now, the key would start from that junk as its
/// TAT; the read of W just before the CAS sends the resolver back to the look-up instead.
#[test]
fn a_stale_resolver_after_the_generation_wraps_leaves_a_new_claim_pending() {
    let quota = quota();
    let table = one_slot();
    let spend = |fp| assert!(table.spend(&request(fp, &quota)).is_ok());
    let claim = KeyWord::EMPTY.claim(tag_of(Y)); // the first claim of the slot: Y's
    spend(Y);
    // Claims 2 to 2^GENERATION_BITS: Z and Y evicting each other, Z's last.
    for _ in 0..(1 << (GENERATION_BITS - 1)) - 1 {
        spend(Z);
        spend(Y);
    }
    spend(Z);
    // The next claim, Y's, is the first claim's K again; its W is still Z's frozen bucket.
    let s = &table.slots.as_slice()[0];
    let (k, w) = (s.key.load(), s.tat.load());
    assert!(freeze(&table.slots, s, k, w));
    s.key.compare_exchange(k, k.claim(tag_of(Y))).unwrap();
    assert_eq!(
        s.key.load(),
        claim,
        "the slot came round to the first claim"
    );
    let step = table.insert().make_live(0, 0, claim); // the stalled resolver wakes
    assert!(matches!(step, Step::Restart), "the claim went LIVE on junk");
    assert_eq!(
        s.key.load(),
        claim,
        "the new claim is left to its own resolver"
    );
}

/// What is left to a thread stalled through a whole cycle of generations right between that
/// read and its CAS: the claim goes LIVE on the junk W. A junk TAT that no operation could
/// have written is removed by the next `evict_idle`, and the key is checked afresh.
#[test]
fn a_bucket_made_live_on_an_impossible_tat_is_evicted() {
    let quota = quota();
    let table = one_slot();
    let junk = (1 << 63) + 12_345;
    live_y_at(&table, junk);
    assert_eq!(table.tat_of(Y), Some(junk));
    assert!(
        table.spend(&request(Y, &quota)).is_err(),
        "denied on the junk"
    );
    assert_eq!(table.evict_idle(0), 0, "junk was never a key: uncounted");
    assert_eq!(table.counters.live(), 0);
    assert_eq!(table.tat_of(Y), None, "the junk bucket was kept");
    assert!(table.spend(&request(Y, &quota)).is_ok());
    assert_eq!(table.tat_of(Y), Some(1_000_000_000));
}

/// A bucket made LIVE but not yet published is full at any time, even at the end of the
/// clock: `evict_idle` leaves it (its first spend is about to land) and counts nothing.
#[test]
fn evicting_at_the_end_of_the_clock_leaves_an_unpublished_bucket() {
    let table = one_slot();
    let s = live_y_at(&table, UNPUBLISHED);
    let live = s.key.load();
    assert_eq!(table.evict_idle(u64::MAX), 0);
    assert_eq!(table.counters.live(), 0);
    assert_eq!(s.key.load(), live, "the unpublished bucket was removed");
}
