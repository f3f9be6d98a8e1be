//! Threads flood a tiny table whose keys start empty with new keys, while each key the table
//! already holds is used by a thread of its own, under both overflow policies.
//!
//! The held keys (one slot fewer than the table has) are seen at 0 and are ten seconds deep;
//! the clock moves less than that in all, so none of them is ever full. The flood's keys book
//! ahead (into debt) or are only checked, under the held keys' quota or a quota of a few
//! milliseconds that soon makes them full, so that they make room for one another; a flooder
//! now and then sweeps idle keys. Each held key's thread runs its requests beside an exact
//! bucket (the tests' oracle) started empty at 0: as no other key's request may take
//! tokens from it or give it any, every decision must be the exact bucket's. A held key
//! removed for a new key comes back empty and fails that at once.
//!
//! The threads turn on the slot words' pauses (`sync/test_pauses.rs`), so that the steps of the
//! flood's inserts and sweeps interleave with the held keys' spends throughout the run.

use super::oracle::Exact;
use crate::sync::test_pauses::pause_now_and_then;
use crate::{Clock, KeyedLimiter, ManualClock, Nanos, OverflowPolicy, Quota};
use std::time::{Duration, Instant};

const FLOODERS: u64 = 3;
/// How long each table is flooded, in real time.
const BUDGET: Duration = Duration::from_millis(300);
/// How far the clock may move in all: less than a held key's depth (10 s).
const LAST: u64 = 9_000_000_000;

/// One held key's thread: its requests, each beside the exact bucket.
fn use_held(limiter: &KeyedLimiter<u64, ManualClock>, key: u64, quota: Quota, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    pause_now_and_then(seed.rotate_left(17));
    let mut exact = Exact::empty_at(quota, 0);
    let deadline = Instant::now() + BUDGET;
    while Instant::now() < deadline {
        let at = limiter.clock().now();
        let cost = 1 + rng.u64(..3) as u32;
        let (got, want) = if rng.u64(..2) == 0 {
            let got = limiter.at(at).key(&key).check_n(cost).is_ok();
            (got, exact.take(cost, at.as_u64()))
        } else {
            let wait = rng.u64(..3) * 100_000_000;
            let booked = limiter
                .at(at)
                .key(&key)
                .reserve(cost, Duration::from_nanos(wait));
            let got = booked.map(|r| r.allowed()).is_ok();
            (got, exact.book(cost, at.as_u64(), wait))
        };
        assert_eq!(
            got, want,
            "held key {key}: {cost} at {at:?}, against its exact bucket"
        );
        assert_eq!(
            limiter.at(at).key(&key).available(),
            exact.tokens(at.as_u64()),
            "held key {key} at {at:?}"
        );
    }
}

/// One flooder's thread: new keys, each checked or booking ahead, and now and then a sweep.
fn flood(limiter: &KeyedLimiter<u64, ManualClock>, quota: Quota, thread: u64) {
    let mut rng = fastrand::Rng::with_seed(0x9E37_79B9_7F4A_7C15 ^ (thread + 1) << 32);
    pause_now_and_then(thread.wrapping_mul(0xBF58_476D_1CE4_E5B9) | 1);
    let short = Quota::try_new(Duration::from_millis(1), 2).unwrap();
    let deadline = Instant::now() + BUDGET;
    let mut fresh = (thread + 1) << 48;
    while Instant::now() < deadline {
        fresh += 1;
        let at = limiter.clock().now();
        let key = limiter.at(at).key(&fresh);
        let key = if rng.u64(..4) == 0 {
            key.with_quota(quota)
        } else {
            key.with_quota(short)
        };
        match rng.u64(..8) {
            0..=4 => {
                let wait = Duration::from_millis(rng.u64(..20));
                let _ = key.reserve(1 + rng.u64(..2) as u32, wait);
            }
            5 | 6 => {
                let _ = key.check_n(1);
            }
            _ => {
                limiter.at(at).evict_idle();
            }
        }
    }
}

fn stress(max_keys: usize, policy: OverflowPolicy) {
    let quota = Quota::per_second(10).with_burst(100);
    let limiter = KeyedLimiter::<u64, _>::builder(quota)
        .max_keys(max_keys)
        .clock(ManualClock::new())
        .start_empty(true)
        .overflow(policy)
        .build();
    let held: Vec<u64> = (0..limiter.capacity() as u64 - 1).collect();
    for key in &held {
        assert!(
            limiter.at(Nanos::ZERO).check_key(key).is_err(),
            "starts empty"
        );
    }
    std::thread::scope(|s| {
        let limiter = &limiter;
        for &key in &held {
            s.spawn(move || use_held(limiter, key, quota, key * 0x2545_F491 + 7));
        }
        for thread in 0..FLOODERS {
            s.spawn(move || flood(limiter, quota, thread));
        }
        // The clock: a fraction of a millisecond at a time, never a held key's depth in all.
        let mut rng = fastrand::Rng::with_seed(max_keys as u64 | 1 << 20);
        let deadline = Instant::now() + BUDGET;
        while Instant::now() < deadline {
            if limiter.clock().now().as_u64() < LAST {
                limiter
                    .clock()
                    .advance(Duration::from_micros(rng.u64(..300)));
            }
            std::thread::yield_now();
        }
    });
    let stats = limiter.stats();
    assert_eq!(
        stats.overflow_evictions, 0,
        "max_keys {max_keys}, {policy:?}"
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "threads for seconds; tests/keyed_churn.rs is sized for Miri"
)]
fn a_flood_of_new_keys_never_moves_a_held_keys_tokens_in_tiny_tables() {
    for max_keys in 1..=4 {
        for policy in [OverflowPolicy::EvictNearestNew, OverflowPolicy::DenyNewKeys] {
            stress(max_keys, policy);
        }
    }
}
