//! Reading and rewriting a key's TAT (give-backs, rebases, `available`) when the
//! look-up meets, before the key's bucket, a slot of the key that holds none of its tokens: a
//! duplicate claim of the key, or a removed bucket of it whose K moves while it is read.

use super::claim::{Overflow, Step};
use super::loom_hooks::Faults;
use super::memory::zeroed_slots;
use super::request::Request;
use super::slot::{tag_of, Slot, FROZEN};
use super::test_hooks::once_between_reads;
use super::upkeep::{freeze, retire};
use super::Table;
use crate::Quota;
use core::time::Duration;

/// Two keys whose home is slot 0 of two (fingerprints below 2^63).
const X: u64 = 0x1234_5678_9abc_def0;
const Z: u64 = 0x0fed_cba9_8765_4321;
/// The emission interval: X's TAT after one spend at 0.
const T: u64 = 1_000_000_000;

fn quota() -> Quota {
    Quota::try_new(Duration::from_nanos(T), 2).unwrap()
}

/// Spends one token of the key of fingerprint `fp` at 0.
fn spend(table: &Table, fp: u64, quota: &Quota) {
    assert!(table.spend(&Request::one_at_zero(fp, quota)).is_ok());
}

/// A rewrite that takes one token off the TAT.
fn one_token_back(_quota: &Quota) -> impl FnMut(u64) -> Option<u64> {
    |tat| tat.checked_sub(T)
}

/// Two slots: X's bucket, one token spent (TAT `T`), in slot 1, behind a slot 0 whose bucket
/// (Z's) was removed.
fn x_in_slot_1(quota: &Quota) -> Table {
    let table = Table::new(
        zeroed_slots(2).unwrap(),
        2,
        Overflow::DenyNewKeys,
        false,
        Faults::NONE,
    );
    spend(&table, Z, quota);
    spend(&table, X, quota);
    let s0 = slot_0(&table);
    let (k, w) = (s0.key.load(), s0.tat.load());
    assert!(freeze(&table.slots, s0, k, w));
    retire(&table.slots, s0, k);
    assert_eq!(table.tat_of(X), Some(T));
    table
}

fn slot_0(table: &Table) -> &Slot {
    &table.slots.as_slice()[0]
}

/// Two inserts of X raced: one claimed slot 1 and made X's bucket LIVE there while slot 0 was
/// taken; the other found slot 0 freed and claimed it, and has not rescanned yet. Until it
/// does (and retracts its claim), reads and rewrites of X must reach the bucket in slot 1.
#[test]
fn a_duplicate_claim_of_the_key_does_not_hide_its_bucket() {
    let quota = quota();
    let table = x_in_slot_1(&quota);
    let s0 = slot_0(&table);
    let k = s0.key.load();
    let claim = k.claim(tag_of(X));
    s0.key.compare_exchange(k, claim).unwrap();
    assert_eq!(
        table.tat_of(X),
        Some(T),
        "the claim hid X's bucket from a read"
    );
    assert!(
        table.rewrite(X, 0, one_token_back(&quota)),
        "the rewrite of X was dropped"
    );
    assert_eq!(table.tat_of(X), Some(0));
    spend(&table, X, &quota);
    assert_eq!(table.tat_of(X), Some(T), "a spend of X missed its bucket");
    // The claim's owner wakes: its rescan finds X LIVE in slot 1 and retracts the claim.
    assert!(matches!(
        table.insert().resolve(0, 0, claim),
        Step::Live((1, _, _))
    ));
    assert!(
        !s0.key.load().holds_key(),
        "the duplicate claim was not retracted"
    );
    assert_eq!(table.tat_of(X), Some(T));
}

/// Slot 0 holds a frozen bucket of X whose removal is not finished; X's bucket is in slot 1.
/// A read of slot 0 that sees its K retired between its reads of W and K must scan again,
/// not take X for absent.
#[test]
fn a_read_that_sees_a_slot_of_the_key_move_scans_again() {
    let quota = quota();
    let table = x_in_slot_1(&quota);
    let s0 = slot_0(&table);
    let k = s0.key.load();
    let frozen = k.claim(tag_of(X)).live();
    s0.key.compare_exchange(k, frozen).unwrap();
    let w = s0.tat.load();
    s0.tat.compare_exchange(w, FROZEN ^ frozen.mask()).unwrap();
    let finish_removal = |slot: &Slot| {
        let k = slot.key.load();
        slot.key.compare_exchange(k, k.tombstone()).unwrap();
    };
    once_between_reads(finish_removal);
    assert_eq!(table.tat_of(X), Some(T), "X taken for absent by a read");
    let (k, w) = (s0.key.load(), s0.tat.load());
    s0.key.compare_exchange(k, frozen).unwrap(); // X's removed bucket again, still frozen
    assert_eq!(w ^ frozen.mask(), FROZEN);
    once_between_reads(finish_removal);
    assert!(
        table.rewrite(X, 0, one_token_back(&quota)),
        "the rewrite of X was dropped"
    );
    assert_eq!(table.tat_of(X), Some(0));
}
