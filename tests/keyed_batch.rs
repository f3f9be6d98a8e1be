//! `check_many`: a batch decides exactly as the same checks made one by one, in order, at
//! one time.

use crate::common::keyed;
use cellrate::{Allowed, Denied, KeyedLimiter, ManualClock, Nanos, OverflowPolicy, Quota};
use proptest::prelude::*;
use std::time::Duration;

/// A limiter on a manual clock: small buckets, so batches meet both decisions, and room for
/// `max_keys` keys under `policy`.
fn table(
    max_keys: usize,
    policy: OverflowPolicy,
    start_empty: bool,
) -> KeyedLimiter<u16, ManualClock> {
    let quota = Quota::try_new(Duration::from_nanos(10), 3).expect("a valid quota");
    KeyedLimiter::builder(quota)
        .max_keys(max_keys)
        .overflow(policy)
        .clock(ManualClock::new())
        .start_empty(start_empty)
        .build()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Batches of random keys at random costs (repeats included: a key listed twice sees its first spend)
    /// against one-by-one checks on a twin limiter, batch after batch with time moving. The
    /// twins hash with different random keys, so their tables have room for every key: on a
    /// full table the two would evict different keys.
    #[test]
    fn a_batch_decides_as_the_checks_one_by_one(
        batches in proptest::collection::vec(
            (proptest::collection::vec((0..40u16, 0..=4u32), 0..40), 0..=40u64),
            1..12,
        ),
        max_keys in prop_oneof![Just(40usize), Just(1000)],
        deny_new in any::<bool>(),
        start_empty in any::<bool>(),
    ) {
        let policy = if deny_new { OverflowPolicy::DenyNewKeys } else { OverflowPolicy::EvictNearestNew };
        let batched = table(max_keys, policy, start_empty);
        let single = table(max_keys, policy, start_empty);
        let mut now = 0;
        for (requests, step) in batches {
            now += step;
            let refs: Vec<(&u16, u32)> = requests.iter().map(|(k, cost)| (k, *cost)).collect();
            let decisions = batched.at(Nanos::new(now)).check_many(&refs);
            let expected: Vec<Result<Allowed, Denied>> = requests
                .iter()
                .map(|(k, cost)| single.at(Nanos::new(now)).key(k).check_n(*cost))
                .collect();
            prop_assert_eq!(decisions, expected);
            prop_assert_eq!(batched.len(), single.len());
            for key in 0..40u16 {
                let at = Nanos::new(now);
                prop_assert_eq!(batched.at(at).key(&key).available(), single.at(at).key(&key).available());
            }
        }
    }
}

#[test]
fn decisions_come_in_the_order_of_the_requests() {
    let limiter = table(100, OverflowPolicy::EvictNearestNew, false);
    let none: &[(&u16, u32)] = &[];
    assert!(
        limiter.at(Nanos::new(5)).check_many(none).is_empty(),
        "no requests, no decisions"
    );
    // 20 keys, more than the lookahead, each listed 4 times: 3 allowed, then denied.
    let keys: Vec<u16> = (0..80).map(|i| i % 20).collect();
    let requests: Vec<(&u16, u32)> = keys.iter().map(|k| (k, 1)).collect();
    let decisions = limiter.at(Nanos::new(5)).check_many(&requests);
    let allowed: Vec<bool> = decisions.iter().map(Result::is_ok).collect();
    let expected: Vec<bool> = (0..80).map(|i| i < 60).collect();
    assert_eq!(allowed, expected);
    // Each request's own cost: 2 of 3, then 2 more is too many, then the last 1 passes.
    let decisions = limiter
        .at(Nanos::new(5))
        .check_many(&[(&1000u16, 2), (&1000, 2), (&1000, 1)]);
    let allowed: Vec<bool> = decisions.iter().map(Result::is_ok).collect();
    assert_eq!(allowed, [true, false, true]);
}

#[test]
fn string_keys_are_looked_up_by_str_and_the_clock_is_read_once() {
    let (limiter, clock) = keyed::<String>(Quota::per_second(1));
    let names = [String::from("alice"), String::from("bob")];
    let requests: Vec<(&str, u32)> = names.iter().map(|n| (n.as_str(), 1)).collect();
    let mut decisions = limiter.check_many(&requests);
    decisions.extend(limiter.check_many(&[("alice", 1), ("carol", 1)]));
    let allowed: Vec<bool> = decisions.iter().map(Result::is_ok).collect();
    assert_eq!(allowed, [true, true, false, true]);
    clock.advance(Duration::from_secs(1));
    let decisions = limiter.check_many(&[("alice", 1)]);
    assert!(decisions[0].is_ok(), "the batch read the advanced clock");
}
