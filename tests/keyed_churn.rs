//! A small churn of the keyed table, sized for Miri (`scripts/miri.sh`, which runs it under
//! weak-memory emulation over many scheduling seeds): three threads on a table of two slots
//! shared by three keys, on a frozen clock. Each thread spends a token of one key after
//! another and gives it back, and evicts idle buckets, so that keys are inserted into, removed
//! from and reinserted into the two slots, often by two threads at once. At the end every token
//! is back: every key's bucket is full.

use cellrate::{KeyedLimiter, ManualClock, OverflowPolicy, Quota};
use std::time::Duration;

#[test]
fn every_token_comes_back_through_the_churn() {
    let limiter =
        KeyedLimiter::<u64, _>::builder(Quota::try_new(Duration::from_secs(1), 2).unwrap())
            .max_keys(1) // two slots
            .clock(ManualClock::new())
            // No bucket that holds a token is forgotten.
            .overflow(OverflowPolicy::DenyNewKeys)
            .build();
    assert_eq!(limiter.capacity(), 2);
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let limiter = &limiter;
            s.spawn(move || {
                for i in 0..4 {
                    let key = limiter.key(&((t + i) % 3));
                    if key.check().is_ok() {
                        key.refund();
                    }
                    if i % 2 == 1 {
                        limiter.evict_idle();
                    }
                }
            });
        }
    });
    for k in 0..3u64 {
        assert_eq!(limiter.key(&k).available(), 2, "key {k} lost a token");
    }
}
