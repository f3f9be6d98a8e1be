//! `stats()`: exact counts after scripted sequences on a ManualClock, for named and unnamed
//! limiters; the striped counters' totals under many threads.

use crate::common::{keyed, manual};
use cellrate::{Clock, KeyedLimiter, Limiter, ManualClock, Nanos, OverflowPolicy, Quota, Stats};
use std::time::Duration;

/// 2 tokens a second, burst 3.
fn quota() -> Quota {
    Quota::per_second(2).with_burst(3)
}

/// Three admitted, one denied, one peek, one too costly ever to pass; then half a second later
/// one more admitted.
fn script(check: impl Fn(u32) -> Result<cellrate::Allowed, cellrate::Denied>, clock: &ManualClock) {
    for _ in 0..3 {
        check(1).unwrap();
    }
    check(1).unwrap_err();
    check(0).unwrap();
    check(4).unwrap_err();
    clock.advance(Duration::from_millis(500));
    check(1).unwrap();
}

/// Counting rides on the path of a limiter whose quota changed (`Limiter::named` moves its
/// bucket once): it must count whatever else moves the bucket or rebuilds the limiter.
#[test]
fn a_named_limiter_counts_across_start_empty_and_quota_changes() {
    let clock = ManualClock::new();
    let orders: [fn(Limiter<ManualClock>) -> Limiter<ManualClock>; 2] = [
        |limiter| limiter.start_empty(true).named("a"),
        |limiter| limiter.named("b").start_empty(true),
    ];
    for order in orders {
        let limiter = order(Limiter::with_clock(quota(), clock.clone()));
        limiter.check().unwrap_err();
        clock.advance(Duration::from_millis(500));
        limiter.check().unwrap();
        let spent_all = Quota::per_second(4).with_burst(3);
        limiter.set_quota(spent_all, cellrate::QuotaChange::default());
        limiter.check().unwrap_err();
        clock.advance(Duration::from_millis(250));
        limiter.check().unwrap();
        let stats = limiter.stats();
        assert_eq!((stats.allowed, stats.denied), (2, 2), "{limiter:?}");
    }
}

#[test]
fn a_named_limiter_counts_every_decision() {
    let (limiter, clock) = manual(quota());
    let limiter = limiter.named("api");
    assert!(format!("{limiter:?}").contains("\"api\""));
    script(|cost| limiter.check_n(cost), &clock);
    let stats = limiter.stats();
    assert_eq!((stats.allowed, stats.denied, stats.peeks), (4, 2, 1));
    // The time-passed-in forms and the waits count too: the bucket is empty, so a wait that
    // may not wait is refused, and one that may wait 500 ms books the next token.
    limiter.at(clock.now()).check().unwrap_err();
    limiter.wait(1, Duration::ZERO).unwrap_err();
    let waited = limiter.wait(1, Duration::from_millis(500));
    assert!(waited.is_ok(), "{waited:?}");
    let stats = limiter.stats();
    assert_eq!((stats.allowed, stats.denied, stats.peeks), (5, 4, 1));
}

#[test]
fn an_unnamed_limiter_counts_nothing() {
    let (limiter, clock) = manual(quota());
    script(|cost| limiter.check_n(cost), &clock);
    limiter.wait(1, Duration::ZERO).unwrap_err();
    assert_eq!(limiter.stats(), Stats::default());
}

#[test]
fn reservations_and_their_give_backs_are_not_counted() {
    let (limiter, _) = manual(quota());
    let limiter = limiter.named("api");
    limiter.reserve(2, Duration::ZERO).unwrap().allowed();
    limiter.reserve(1, Duration::ZERO).unwrap().cancel();
    assert_eq!(limiter.stats(), Stats::default());
}

#[test]
fn a_named_keyed_limiter_counts_checks_through_every_form() {
    let (limiter, clock) = keyed::<String>(quota());
    let limiter = limiter.named("users");
    assert!(format!("{limiter:?}").contains("\"users\""));
    script(|cost| limiter.key("alice").check_n(cost), &clock);
    // The handle, a tier, the batch and a wait: bob spends his 3, then is refused twice.
    let bob = limiter.key("bob");
    bob.check_n(2).unwrap();
    let decisions = limiter.check_many(&[("bob", 1), ("bob", 1), ("carol", 1)]);
    assert_eq!(decisions.iter().filter(|d| d.is_ok()).count(), 2);
    bob.wait(1, Duration::ZERO).unwrap_err();
    let stats = limiter.stats();
    assert_eq!((stats.allowed, stats.denied, stats.peeks), (7, 4, 1));
    assert_eq!(stats.keys, 3);
}

#[test]
fn an_unnamed_keyed_limiter_counts_keys_and_evictions_but_no_decisions() {
    let (limiter, clock) = keyed::<u64>(quota());
    for k in 0..10 {
        limiter.check_key(&k).unwrap();
    }
    limiter.key(&0).check_n(2).unwrap();
    limiter.check_key(&0).unwrap_err();
    let stats = limiter.stats();
    assert_eq!((stats.allowed, stats.denied, stats.keys), (0, 0, 10));
    // 500 ms on, the nine keys that spent one token are full again, key 0 is not.
    clock.advance(Duration::from_millis(500));
    assert_eq!(limiter.evict_idle(), 9);
    clock.advance(Duration::from_secs(1));
    assert_eq!(limiter.evict_idle(), 1);
    let stats = limiter.stats();
    assert_eq!((stats.keys, stats.idle_evictions), (0, 10));
    assert_eq!((stats.overflow_evictions, stats.overflow_denials), (0, 0));
}

#[test]
fn overflows_are_counted_under_each_policy() {
    // More keys than slots, none idle (nothing is full again before 1 µs).
    let slow = Quota::try_new(Duration::from_micros(1), 1).unwrap();
    for policy in [OverflowPolicy::EvictNearestNew, OverflowPolicy::DenyNewKeys] {
        let limiter = KeyedLimiter::<u64, _>::builder(slow)
            .max_keys(8)
            .clock(ManualClock::new())
            .overflow(policy)
            .build()
            .named("small");
        let slots = limiter.capacity() as u64;
        for k in 0..slots + 5 {
            let _ = limiter.at(Nanos::new(k)).key(&k).check_n(1);
        }
        let stats = limiter.stats();
        assert_eq!(stats.keys, slots);
        match policy {
            OverflowPolicy::EvictNearestNew => {
                assert_eq!((stats.overflow_evictions, stats.overflow_denials), (5, 0));
                assert_eq!((stats.allowed, stats.denied), (slots + 5, 0));
            }
            _ => {
                assert_eq!((stats.overflow_evictions, stats.overflow_denials), (0, 5));
                assert_eq!((stats.allowed, stats.denied), (slots, 5));
            }
        }
    }
}

#[test]
fn a_named_limiter_totals_exactly_under_many_threads() {
    // 25,000 tokens at one instant for 8 threads x 5,000 checks: exactly 25,000 admitted and
    // 15,000 refused whatever the interleaving, all counted (more threads than this machine's
    // stripes, so some threads share one).
    let quota = Quota::try_new(Duration::from_secs(1), 25_000).unwrap();
    let limiter = Limiter::with_clock(quota, ManualClock::new()).named("hot");
    let keyed = KeyedLimiter::<u64, _>::builder(quota)
        .clock(ManualClock::new())
        .build()
        .named("hot key");
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..5_000 {
                    let _ = limiter.at(Nanos::new(1)).check();
                    let _ = keyed.at(Nanos::new(1)).key(&7).check_n(1);
                }
            });
        }
    });
    let (one, many) = (limiter.stats(), keyed.stats());
    assert_eq!((one.allowed, one.denied), (25_000, 15_000));
    assert_eq!((many.allowed, many.denied), (25_000, 15_000));
}
