//! The removal steps against a thread that stalls while a slot goes through a whole cycle of
//! generations (see [`upkeep`](super::upkeep), *A stalled thread*).

use super::claim::{Overflow, Room, Step};
use super::loom_hooks::Faults;
use super::request::Request;
use super::slot::{zeroed_slots, KeyWord};
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
    Request {
        fp,
        now: 0,
        cost: 1,
        quota,
        start_empty: false,
        max_wait_ns: 0,
    }
}

/// A one-slot table where Y's bucket (one spend) was frozen, as by a thread that then
/// stalled, and the slot then went through 4,096 claims (Y and Z evicting each other), so
/// that Y is LIVE again with one spend under the same K. Returns the table and that K.
fn wrapped(quota: &Quota) -> (Table, KeyWord) {
    let table = Table::new(
        zeroed_slots(1).unwrap(),
        1,
        Overflow::EvictNearestFull,
        Faults::NONE,
    );
    let spend = |fp| table.spend(&request(fp, quota)).is_ok();
    assert!(spend(Y));
    let s = &table.slots.as_slice()[0];
    let (k0, w0) = (s.key.load(), s.tat.load());
    assert!(freeze(&table.slots, s, k0, w0));
    for _ in 0..2048 {
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
