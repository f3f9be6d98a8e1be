//! The loom models of the keyed table: concurrent inserts of one new key and their duplicates
//! (`insert_tests.rs`); eviction racing a check, slot reuse after eviction (ABA) and a key
//! checked at a reading earlier than its removal's (`removal_tests.rs`); give-backs racing the
//! eviction, re-insert or duplicate insert of their key, and an `all_of` rollback in the table
//! (`give_back_tests.rs`); a new key taking the slot of a full bucket in a table whose keys
//! start empty (`start_empty_tests.rs`).
//!
//! Each model runs the real protocol on a tiny table (one or two slots, every key's window
//! covering all of them) and has a twin whose table breaks one step (the [`Faults`] switch,
//! `loom_hooks.rs`), which must fail. The slot words are a sequentially consistent stand-in
//! (every operation a `SeqCst` read-modify-write, `sync.rs`), so these models check the
//! protocol under sequential consistency.

mod give_back_tests;
mod insert_tests;
mod removal_tests;
mod start_empty_tests;

use super::claim::Overflow;
use super::loom_hooks::{Broken, Faults};
use super::memory::zeroed_slots;
use super::slot::{tag_of, Slot};
use super::Table;
use crate::keyed::fingerprint::Fingerprinter;
use crate::{FingerprintHash, KeyedLimiter, ManualClock, Nanos, Quota};
use core::time::Duration;
use loom::sync::Arc;

/// The emission interval of every model, in ns.
const T: u64 = 10;

type Keyed = KeyedLimiter<u64, ManualClock>;

/// A limiter of burst `burst` whose table has exactly `slots` slots, each key's window all of
/// them, new keys starting full (or empty), with the step `broken` broken.
fn tiny(burst: u32, slots: usize, start_empty: bool, broken: Broken) -> Arc<Keyed> {
    let quota = Quota::try_new(Duration::from_nanos(T), burst).unwrap();
    let table = Table::new(
        zeroed_slots(slots).unwrap(),
        slots,
        Overflow::EvictNearestNew,
        start_empty,
        Faults::new(broken),
    );
    // Under loom the fingerprints are SipHash-1-3 under a fixed key: a model is the same in
    // every iteration.
    let fingerprinter = Fingerprinter::new(FingerprintHash::SipHash13);
    Arc::new(KeyedLimiter::from_parts(
        table,
        quota,
        ManualClock::new(),
        start_empty,
        fingerprinter,
    ))
}

/// [`tiny`] with new keys starting full.
fn keyed(burst: u32, slots: usize, broken: Broken) -> Arc<Keyed> {
    tiny(burst, slots, false, broken)
}

/// The first three keys whose home is slot 0, so that their windows are in the same order.
fn keys_at_home_zero(limiter: &Keyed) -> [u64; 3] {
    let mut keys = (0..).filter(|k| limiter.table.home(limiter.fingerprint(k)) == 0);
    [(); 3].map(|()| keys.next().unwrap())
}

/// Spends `cost` tokens of `key` at `now`, which must be there.
fn spend(limiter: &Keyed, key: u64, cost: u32, now: u64) {
    let key = limiter.at(Nanos::new(now)).key(&key);
    key.check_n(cost).unwrap();
}

/// How many slots hold a claim or an unfrozen bucket of `key`; at rest.
fn slots_holding(limiter: &Keyed, key: u64) -> usize {
    let tag = tag_of(limiter.fingerprint(&key));
    let slots = &limiter.table.slots;
    let held = |s: &Slot| {
        let k = s.key.load();
        k.tag() == tag && (k.is_pending() || slots.read_live(s, k).is_some())
    };
    slots.as_slice().iter().filter(|s| held(s)).count()
}

/// The preemption bound of the models of two threads whose runs are long (inserts, reuse,
/// eviction of a booked key). Exhaustive search of them takes hours; 5 takes seconds.
const TWO_THREADS: usize = 5;
