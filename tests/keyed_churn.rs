//! A small churn of the keyed table, sized for Miri (`scripts/miri.sh`, which runs it under
//! weak-memory emulation over many scheduling seeds): three threads on a table of two slots
//! shared by three keys, on a frozen clock. Each thread books a token of one key after another
//! and gives most of them back, and evicts idle buckets, so that keys are inserted into,
//! removed from and reinserted into the two slots, often by two threads at once. At the end no
//! key has carried out more than its burst: a spend that landed in a second bucket of its key,
//! or a give-back of more than its booking held, would let it.

use cellrate::{KeyedLimiter, ManualClock, OverflowPolicy, Quota};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const BURST: u32 = 2;

#[test]
fn no_key_carries_out_more_than_its_burst_through_the_churn() {
    let limiter =
        KeyedLimiter::<u64, _>::builder(Quota::try_new(Duration::from_secs(1), BURST).unwrap())
            .max_keys(1) // two slots
            .clock(ManualClock::new())
            // No bucket that holds a token is forgotten.
            .overflow(OverflowPolicy::DenyNewKeys)
            .build();
    assert_eq!(limiter.capacity(), 2);
    let carried: [AtomicU32; 3] = Default::default();
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let (limiter, carried) = (&limiter, &carried);
            s.spawn(move || {
                for i in 0..4 {
                    let k = (t + i) % 3;
                    if let Ok(booked) = limiter.key(&k).reserve(1, Duration::ZERO) {
                        if i == 3 && t == 0 {
                            // Relaxed: read after the threads are joined.
                            carried[k as usize].fetch_add(1, Ordering::Relaxed);
                        } else {
                            booked.cancel();
                        }
                    }
                    if i % 2 == 1 {
                        limiter.evict_idle();
                    }
                }
            });
        }
    });
    for (k, carried) in carried.iter().enumerate() {
        let carried = carried.load(Ordering::Relaxed);
        let available = limiter.key(&(k as u64)).available();
        assert!(
            available + carried <= BURST,
            "key {k}: {available} tokens left after {carried} carried out, of {BURST}"
        );
    }
}
