//! Each key of a `KeyedLimiter` decides exactly as its own `MutexBucket`, on random
//! multi-key schedules, with idle keys evicted and reclaimed along the way.

use crate::common;
use crate::common::mutex_bucket::MutexBucket;
use cellrate::{FingerprintHash, KeyedLimiter, ManualClock, Nanos, OverflowPolicy, Quota};
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

const T: u64 = 10;

fn quota() -> Quota {
    common::quota(T, 3)
}

#[derive(Clone, Debug)]
enum Op {
    /// Spend `cost` of `key`, `step` ns after the previous operation (negative: stale).
    Check { key: u8, cost: u32, step: i64 },
    /// Peek at `key`.
    Available { key: u8, step: i64 },
    /// Remove idle keys.
    EvictIdle { step: i64 },
}

fn ops(keys: u8, stale: bool, evict: bool) -> impl Strategy<Value = Vec<Op>> {
    let back = if stale { -15 } else { 0 };
    let op = prop_oneof![
        6 => (0..keys, 0..=4u32, back..=25i64).prop_map(|(key, cost, step)| Op::Check { key, cost, step }),
        2 => (0..keys, back..=25i64).prop_map(|(key, step)| Op::Available { key, step }),
        (if evict { 1 } else { 0 }) => (0..=25i64).prop_map(|step| Op::EvictIdle { step }),
    ];
    proptest::collection::vec(op, 1..200)
}

/// The oracle: one `MutexBucket` per key, made full on first use.
#[derive(Default)]
struct Oracle {
    buckets: HashMap<u8, MutexBucket<ManualClock>>,
}

impl Oracle {
    fn bucket(&mut self, key: u8) -> &MutexBucket<ManualClock> {
        self.buckets
            .entry(key)
            .or_insert_with(|| MutexBucket::with_clock(quota(), ManualClock::new()))
    }
}

/// Runs `ops` on both and compares every answer. Stops comparing at the first overflow (a
/// new key finding no room), after which the keyed limiter legitimately forgets a key; the
/// schedules are sized so that this is rare. Returns the number of operations compared.
fn run(ops: &[Op], max_keys: usize, hash: FingerprintHash) -> Result<usize, TestCaseError> {
    run_counting(ops, max_keys, hash).map(|(compared, _)| compared)
}

/// [`run`], also returning the most keys the limiter held at once.
fn run_counting(
    ops: &[Op],
    max_keys: usize,
    hash: FingerprintHash,
) -> Result<(usize, usize), TestCaseError> {
    let keyed = KeyedLimiter::<u8, _>::builder(quota())
        .max_keys(max_keys)
        .fingerprint_hash(hash)
        .clock(ManualClock::new())
        .overflow(OverflowPolicy::DenyNewKeys)
        .build();
    let mut oracle = Oracle::default();
    let mut now: i64 = 1_000;
    let mut most = 0;
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Check { key, cost, step } => {
                now += step;
                let at = Nanos::new(now as u64);
                let got = keyed.at(at).key(&key).check_n(cost);
                most = most.max(keyed.len());
                let stats = keyed.stats();
                if stats.overflow_evictions + stats.overflow_denials > 0 {
                    return Ok((i, most));
                }
                let want = oracle.bucket(key).check_n_at(cost, at);
                prop_assert_eq!(got, want, "op {} {:?} at {}", i, op, now);
            }
            Op::Available { key, step } => {
                now += step;
                let at = Nanos::new(now as u64);
                let want = oracle.bucket(key).available_at(at);
                prop_assert_eq!(
                    keyed.at(at).key(&key).available(),
                    want,
                    "op {} {:?}",
                    i,
                    op
                );
            }
            Op::EvictIdle { step } => {
                now += step;
                keyed.at(Nanos::new(now as u64)).evict_idle();
            }
        }
    }
    Ok((ops.len(), most))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A table with room for every key, and times that sometimes go backwards.
    #[test]
    fn keys_match_their_own_bucket_with_stale_times(ops in ops(8, true, false)) {
        prop_assert_eq!(run(&ops, 64, FingerprintHash::AesCmac)?, ops.len());
    }

    /// The same with SipHash-1-3 fingerprints (the default where AES-NI is absent).
    #[test]
    fn keys_match_their_own_bucket_under_siphash(ops in ops(8, true, false)) {
        prop_assert_eq!(run(&ops, 64, FingerprintHash::SipHash13)?, ops.len());
    }

    /// A table of 5 slots for 10 keys, with sweeps: keys are evicted and their slots reused
    /// by other keys all the time, and the decisions cannot tell.
    #[test]
    fn eviction_and_slot_reuse_are_invisible(ops in ops(10, false, true)) {
        let (compared, _) = run_counting(&ops, 4, FingerprintHash::AesCmac)?;
        COMPARED.fetch_add(compared, Ordering::Relaxed);
        TOTAL.fetch_add(ops.len(), Ordering::Relaxed);
    }
}

static COMPARED: AtomicUsize = AtomicUsize::new(0);
static TOTAL: AtomicUsize = AtomicUsize::new(0);

#[test]
fn the_small_table_schedules_do_reuse_slots() {
    // The random schedules above are compared up to their first overflow: most of each.
    eviction_and_slot_reuse_are_invisible();
    let (compared, total) = (
        COMPARED.load(Ordering::Relaxed),
        TOTAL.load(Ordering::Relaxed),
    );
    assert!(
        compared * 10 >= total * 8,
        "compared {compared} of {total} operations"
    );

    // Guards the property above against testing nothing: a fixed schedule that cycles ten keys
    // through five slots, compared step by step, with no overflow.
    // Each key spends its whole burst (idle again 30 ns later) every 80 ns.
    let ops: Vec<Op> = (0..200)
        .map(|i| Op::Check {
            key: (i % 10) as u8,
            cost: 3,
            step: 8,
        })
        .collect();
    let (compared, most) = run_counting(&ops, 4, FingerprintHash::AesCmac).unwrap();
    assert_eq!(compared, ops.len(), "no overflow");
    assert!(
        most <= 5,
        "ten keys took turns in five slots, yet {most} were held"
    );
}
