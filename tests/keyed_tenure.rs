//! Where the keyed table meets give-backs, the clock and `start_empty`: a give-back of an
//! evicted bucket never reaches the key's next bucket, eviction never changes what a key holds
//! (a full key comes back full, also under `start_empty`; floods are in `keyed_flood.rs`),
//! sweeps never drop a bucket that is not full at the checks' own time, and a new key's wait
//! waits for room.

use crate::common::{ms, returns_at_once, until_judged, LaggingClock};
use cellrate::{Clock, KeyedLimiter, ManualClock, MonotonicClock, OverflowPolicy, Quota};
use std::time::Duration;

/// A two-slot table (one key's capacity) of 10 a second, everything at 0.
fn two_slots(policy: OverflowPolicy) -> KeyedLimiter<u32, ManualClock> {
    KeyedLimiter::<u32, _>::builder(Quota::per_second(10))
        .max_keys(1)
        .clock(ManualClock::new())
        .overflow(policy)
        .build()
}

#[test]
fn a_give_back_of_an_evicted_tenure_never_reaches_the_keys_next_bucket() {
    let limiter = two_slots(OverflowPolicy::EvictNearestNew);
    assert_eq!(limiter.capacity(), 2);
    let booked = limiter
        .at(ms(0))
        .key(&1)
        .reserve(5, Duration::ZERO)
        .unwrap();
    limiter.at(ms(0)).key(&2).check_n(8).unwrap();
    limiter.at(ms(0)).key(&3).check_n(1).unwrap(); // evicts key 1, nearest to full
                                                   // Key 1 again, with the TAT its first bucket had: the same value, another tenure.
    limiter.at(ms(0)).key(&1).check_n(5).unwrap();
    booked.cancel_at(ms(0));
    assert_eq!(
        limiter.at(ms(0)).key(&1).available(),
        5,
        "the cancel of the evicted bucket gave the new one tokens"
    );
}

#[test]
fn a_settle_of_an_evicted_tenure_gives_nothing_back_either() {
    let limiter = two_slots(OverflowPolicy::EvictNearestNew);
    let booked = limiter
        .at(ms(0))
        .key(&1)
        .reserve(5, Duration::ZERO)
        .unwrap();
    limiter.at(ms(0)).key(&2).check_n(8).unwrap();
    limiter.at(ms(0)).key(&3).check_n(1).unwrap(); // evicts key 1
    limiter.at(ms(0)).key(&1).check_n(3).unwrap(); // key 1 again: 3 spent, below the booking's end
    booked.settle_at(0, ms(0)).unwrap();
    assert_eq!(limiter.at(ms(0)).key(&1).available(), 7);
}

#[test]
fn a_start_empty_key_removed_while_full_comes_back_full() {
    let limiter = KeyedLimiter::<u32, _>::builder(Quota::per_second(10))
        .clock(ManualClock::new())
        .start_empty(true)
        .build();
    assert!(
        limiter.at(ms(0)).check_key(&7).is_err(),
        "a new key starts empty"
    );
    let depth = ms(1_000);
    assert_eq!(limiter.at(depth).key(&7).available(), 10);
    assert_eq!(limiter.at(depth).evict_idle(), 1);
    assert_eq!(limiter.len(), 0);
    assert_eq!(
        limiter.at(depth).key(&7).available(),
        10,
        "removed while full, it came back empty"
    );
    assert!(limiter.at(depth).key(&7).check_n(10).is_ok());
    // A key never seen still starts empty.
    assert!(limiter.at(depth).check_key(&8).is_err());
}

/// The checks of a 16 ms-deep quota read a time 1 ms behind; a sweep at the exact time must not
/// drop a bucket that is full only at the exact time, or its spend would be forgotten.
#[test]
fn a_sweep_never_drops_a_bucket_not_full_at_the_checks_time() {
    let clock = LaggingClock::new(Duration::from_millis(1), Duration::from_millis(1));
    clock.set_lag(Duration::from_millis(1));
    let limiter = KeyedLimiter::<u32, _>::builder(Quota::per_second(1_000).with_burst(16))
        .clock(clock.clone())
        .build();
    clock.truth.set(ms(100)); // the checks read 99 ms
    limiter.check_key(&1).unwrap(); // TAT 100 ms: full at the exact time, not at 99 ms
    assert_eq!(
        limiter.evict_idle(),
        0,
        "removed a bucket the checks see as not full"
    );
    assert!(
        limiter.key(&1).check_n(16).is_err(),
        "17 tokens at one reading on a burst of 16"
    );
    clock.truth.set(ms(101));
    assert_eq!(limiter.evict_idle(), 1);
}

/// Under `DenyNewKeys`, a reservation of a new key reads the time the checks read, so it takes
/// over a bucket only when the checks see it full.
#[test]
fn a_reservation_takes_over_only_a_bucket_full_at_the_checks_time() {
    let clock = LaggingClock::new(Duration::from_millis(1), Duration::from_millis(1));
    clock.set_lag(Duration::from_millis(1));
    let limiter = KeyedLimiter::<u32, _>::builder(Quota::per_second(1_000).with_burst(16))
        .max_keys(1)
        .clock(clock.clone())
        .overflow(OverflowPolicy::DenyNewKeys)
        .build();
    clock.truth.set(ms(100));
    limiter.check_key(&1).unwrap(); // full again at 100 ms
    limiter.check_key(&2).unwrap();
    // At the checks' 99 ms neither is full: a new key has no room.
    assert!(limiter.key(&3).reserve(1, Duration::ZERO).is_err());
    assert_eq!(limiter.key(&1).available(), 15);
}

#[test]
fn a_new_keys_wait_waits_for_room() {
    // Two slots held by keys full again 30 ms and 10 s from now: a third key's wait must wait
    // for the first to be full (room), then for its own token, not fail at once. A run in which
    // this thread is kept off the cores for those 30 ms before the wait begins is not judged.
    let quota = |ms| Quota::try_new(Duration::from_millis(ms), 1).unwrap();
    until_judged("a_new_keys_wait_waits_for_room", || {
        let limiter = KeyedLimiter::<u32, _>::builder(Quota::per_second(100).with_burst(1))
            .max_keys(1)
            .clock(MonotonicClock::new())
            .overflow(OverflowPolicy::DenyNewKeys)
            .build();
        let now = limiter.clock().now();
        let room = now.saturating_add(Duration::from_millis(30));
        limiter
            .at(now)
            .key(&1)
            .with_quota(quota(30))
            .check_n(1)
            .unwrap();
        limiter
            .at(now)
            .key(&2)
            .with_quota(quota(10_000))
            .check_n(1)
            .unwrap();
        if limiter.key(&3).reserve(1, Duration::ZERO).is_ok() {
            assert!(limiter.clock().now() >= room, "room before there was any");
            return false;
        }
        // Its token taken under a quota that holds the slot for 10 s.
        limiter
            .key(&3)
            .with_quota(quota(10_000))
            .wait(1, Duration::MAX)
            .unwrap();
        let ended = limiter.clock().now();
        assert!(
            ended >= room,
            "ended {:?} early",
            room.saturating_duration_since(ended)
        );
        // Both slots held for 10 s: a wait bounded by less than the time until room is refused
        // at once.
        let refused = returns_at_once("a wait for no room", || {
            limiter.key(&4).wait(1, Duration::from_millis(5))
        });
        assert!(refused.is_err());
        true
    });
}
