//! Eight threads insert ten times the capacity of new keys, under each overflow policy:
//! nothing panics, the table stays within its slots, and the statistics count every overflow.

use cellrate::{KeyedLimiter, ManualClock, Nanos, OverflowPolicy, Quota};
use std::sync::atomic::{AtomicU64, Ordering};

const THREADS: u64 = 8;

/// A bijective mix of a counter, so that every thread's keys are distinct and random-looking.
fn key(thread: u64, i: u64) -> u64 {
    let mut x = (thread << 40 | i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 29;
    x.wrapping_mul(0xBF58_476D_1CE4_E5B9)
}

/// Returns (keys tried, admitted, the limiter).
fn flood(policy: OverflowPolicy) -> (u64, u64, KeyedLimiter<u64, ManualClock>) {
    // One token per hour: no bucket is ever idle again during the test.
    let limiter = KeyedLimiter::<u64, _>::builder(Quota::per_hour(1))
        .max_keys(1_000)
        .clock(ManualClock::new())
        .overflow(policy)
        .build();
    let per_thread = 10 * limiter.capacity() as u64 / THREADS;
    let admitted = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (limiter, admitted) = (&limiter, &admitted);
            s.spawn(move || {
                for i in 0..per_thread {
                    if limiter.at(Nanos::ZERO).key(&key(t, i)).check_n(1).is_ok() {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    (per_thread * THREADS, admitted.into_inner(), limiter)
}

/// Keys whose bucket is not full: the keys the table holds.
fn held(limiter: &KeyedLimiter<u64, ManualClock>, tried: u64) -> u64 {
    let per_thread = tried / THREADS;
    (0..THREADS)
        .flat_map(|t| (0..per_thread).map(move |i| key(t, i)))
        .filter(|k| limiter.at(Nanos::ZERO).key(k).available() == 0)
        .count() as u64
}

#[test]
fn evict_nearest_full_admits_every_new_key_and_counts_each_eviction() {
    let (tried, admitted, limiter) = flood(OverflowPolicy::EvictNearestNew);
    assert_eq!(
        admitted, tried,
        "a new key is never denied under this policy"
    );
    let held = held(&limiter, tried);
    let stats = limiter.stats();
    assert_eq!(
        held,
        tried - stats.overflow_evictions,
        "every lost key counted once"
    );
    assert!(held <= limiter.capacity() as u64);
    assert!(
        held > limiter.capacity() as u64 / 2,
        "the table was used: {held}"
    );
    assert_eq!(limiter.len() as u64, held);
    assert_eq!(stats.overflow_denials, 0);
}

#[test]
fn deny_new_keys_keeps_every_held_key_and_counts_each_denial() {
    let (tried, admitted, limiter) = flood(OverflowPolicy::DenyNewKeys);
    let stats = limiter.stats();
    assert_eq!(
        tried - admitted,
        stats.overflow_denials,
        "every denial counted once"
    );
    assert_eq!(
        held(&limiter, tried),
        admitted,
        "no admitted key was forgotten"
    );
    assert!(admitted <= limiter.capacity() as u64);
    assert_eq!(limiter.len() as u64, admitted);
    assert_eq!(stats.overflow_evictions, 0);
}
