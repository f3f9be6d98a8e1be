//! `check_many_n`: a batch decides exactly as the same checks made one by one, in order, at
//! one time.

use cellrate::{Allowed, Denied, KeyedLimiter, ManualClock, Nanos, OverflowPolicy, Quota};
use proptest::prelude::*;
use std::time::Duration;

/// A limiter on a manual clock: small buckets, so batches meet both decisions, and room for
/// `max_keys` keys under `policy`.
fn limiter(
    max_keys: usize,
    policy: OverflowPolicy,
    start_empty: bool,
) -> KeyedLimiter<u16, ManualClock> {
    let quota = Quota::try_new(Duration::from_nanos(10), 3).expect("a valid quota");
    let builder = KeyedLimiter::builder(quota)
        .max_keys(max_keys)
        .overflow(policy)
        .clock(ManualClock::new());
    if start_empty {
        builder.start_empty().build()
    } else {
        builder.build()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Batches of random keys (repeats included: a key listed twice sees its first spend)
    /// against one-by-one checks on a twin limiter, batch after batch with time moving. The
    /// twins hash with different random keys, so their tables have room for every key: on a
    /// full table the two would evict different keys.
    #[test]
    fn a_batch_decides_as_the_checks_one_by_one(
        batches in proptest::collection::vec(
            (proptest::collection::vec(0..40u16, 0..40), 0..=4u32, 0..=40u64),
            1..12,
        ),
        max_keys in prop_oneof![Just(40usize), Just(1000)],
        deny_new in any::<bool>(),
        start_empty in any::<bool>(),
    ) {
        let policy = if deny_new { OverflowPolicy::DenyNewKeys } else { OverflowPolicy::EvictNearestNew };
        let batched = limiter(max_keys, policy, start_empty);
        let single = limiter(max_keys, policy, start_empty);
        let mut now = 0;
        for (keys, cost, step) in batches {
            now += step;
            let mut decisions = Vec::new();
            batched.check_many_n_at(&keys, cost, Nanos::new(now), &mut decisions);
            let expected: Vec<Result<Allowed, Denied>> = keys
                .iter()
                .map(|k| single.check_key_n_at(k, cost, Nanos::new(now)))
                .collect();
            prop_assert_eq!(decisions, expected);
            prop_assert_eq!(batched.len(), single.len());
            for key in 0..40u16 {
                let at = Nanos::new(now);
                prop_assert_eq!(batched.key(&key).available_at(at), single.key(&key).available_at(at));
            }
        }
    }
}

#[test]
fn decisions_are_appended_in_the_order_of_the_keys() {
    let limiter = limiter(100, OverflowPolicy::EvictNearestNew, false);
    let mut decisions = Vec::new();
    limiter.check_many_n_at(std::iter::empty::<&u16>(), 1, Nanos::new(5), &mut decisions);
    assert!(decisions.is_empty(), "no keys, no decisions");
    // 20 keys, more than the lookahead, each listed 4 times: 3 allowed, then denied.
    let keys: Vec<u16> = (0..80).map(|i| i % 20).collect();
    limiter.check_many_n_at(&keys, 1, Nanos::new(5), &mut decisions);
    let allowed: Vec<bool> = decisions.iter().map(Result::is_ok).collect();
    let expected: Vec<bool> = (0..80).map(|i| i < 60).collect();
    assert_eq!(allowed, expected);
    limiter.check_many_n_at(&[1000u16], 1, Nanos::new(5), &mut decisions);
    assert_eq!(decisions.len(), 81, "a second batch appends");
    assert!(decisions[80].is_ok());
}

#[test]
fn string_keys_are_looked_up_by_str_and_the_clock_is_read_once() {
    let clock = ManualClock::new();
    let limiter: KeyedLimiter<String, ManualClock> =
        KeyedLimiter::with_clock(Quota::per_second(1), clock.clone());
    let names = [String::from("alice"), String::from("bob")];
    let mut decisions = Vec::new();
    limiter.check_many_n(names.iter().map(String::as_str), 1, &mut decisions);
    limiter.check_many_n(["alice", "carol"], 1, &mut decisions);
    let allowed: Vec<bool> = decisions.iter().map(Result::is_ok).collect();
    assert_eq!(allowed, [true, true, false, true]);
    clock.advance(Duration::from_secs(1));
    decisions.clear();
    limiter.check_many_n(["alice"], 1, &mut decisions);
    assert!(decisions[0].is_ok(), "the batch read the advanced clock");
}
