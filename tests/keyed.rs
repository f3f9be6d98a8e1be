//! `KeyedLimiter`: per-key behaviour, the API's forms, capacity and bad inputs.
//! (Differential and concurrent tests are in `keyed_differential.rs` and `keyed_overflow.rs`.)

use crate::common::{self, keyed, ms, same_booking};
use cellrate::{
    FingerprintHash, KeyedBuildError, KeyedLimiter, ManualClock, Nanos, OverflowPolicy, Quota,
    DEFAULT_MAX_KEYS,
};
use std::time::Duration;

const T: u64 = 10; // emission interval of the tests, in ns

fn quota(burst: u32) -> Quota {
    common::quota(T, burst)
}

#[test]
fn keys_are_independent() {
    let l = keyed::<u64>(quota(3)).0;
    for _ in 0..3 {
        l.check_key(&1).unwrap();
    }
    assert!(l.check_key(&1).is_err(), "key 1 is empty");
    assert_eq!(
        l.key(&2).available(),
        3,
        "key 2 untouched by key 1's spends"
    );
    assert_eq!(l.key(&2).check_n(3).unwrap().remaining(), 0);
    assert_eq!(l.key(&1).available(), 0);
    assert_eq!(l.len(), 2);
}

#[test]
fn decisions_match_the_single_limiter() {
    let l = keyed::<u32>(quota(4)).0;
    let one = cellrate::Limiter::with_clock(quota(4), ManualClock::new());
    for (i, (cost, now)) in [
        (1, 0),
        (3, 0),
        (1, 5),
        (2, 20),
        (0, 20),
        (5, 21),
        (1, 15),
        (4, 90),
    ]
    .into_iter()
    .enumerate()
    {
        let now = Nanos::new(now);
        assert_eq!(
            l.at(now).key(&9).check_n(cost),
            one.at(now).check_n(cost),
            "step {i}"
        );
        assert_eq!(
            l.at(now).key(&9).available(),
            one.at(now).available(),
            "step {i}"
        );
    }
}

#[test]
fn string_keys_are_looked_up_by_str() {
    let l = keyed::<String>(quota(2)).0;
    l.check_key(&"alice".to_string()).unwrap();
    l.check_key("alice").unwrap();
    let denied = l.check_key("alice").unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_nanos(T)));
    assert_eq!(l.key("bob").available(), 2);
}

#[test]
fn both_fingerprint_hashes_keep_keys_apart_and_find_str_keys() {
    for hash in [FingerprintHash::AesCmac, FingerprintHash::SipHash13] {
        let l = KeyedLimiter::<String, _>::builder(quota(1))
            .max_keys(1000)
            .clock(ManualClock::new())
            .fingerprint_hash(hash)
            .build();
        for i in 0..500 {
            l.check_key(&format!("user-{i}")).unwrap();
        }
        for i in 0..500 {
            let denied = l.check_key(format!("user-{i}").as_str()).is_err();
            assert!(denied, "{hash:?}: user-{i} lost its spend");
        }
        assert_eq!(l.len(), 500, "{hash:?}");
        assert_eq!(l.key("user-500").available(), 1, "{hash:?}");
    }
}

#[test]
fn aes_cmac_is_the_default_where_the_processor_has_aes_ni() {
    // Under Miri the fingerprints are SipHash-1-3 (inline assembly cannot run there).
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    let aes_ni = std::is_x86_feature_detected!("aes");
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let aes_ni = false;
    let l = KeyedLimiter::<u64>::new(quota(1));
    let expected = if aes_ni {
        FingerprintHash::AesCmac
    } else {
        FingerprintHash::SipHash13
    };
    assert!(format!("{l:?}").contains(&format!("fingerprint_hash: {expected:?}")));
    let sip = KeyedLimiter::<u64>::builder(quota(1))
        .fingerprint_hash(FingerprintHash::SipHash13)
        .build();
    assert!(format!("{sip:?}").contains("fingerprint_hash: SipHash13"));
}

#[test]
fn tuple_and_address_keys_work() {
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};
    let by_ip = keyed::<IpAddr>(quota(1)).0;
    let ip = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    by_ip.check_key(&ip).unwrap();
    assert!(by_ip.check_key(&ip).is_err());
    let by_pair = keyed::<(SocketAddr, u16)>(quota(1)).0;
    let key = (SocketAddr::new(ip, 443), 7);
    by_pair.check_key(&key).unwrap();
    assert!(by_pair.check_key(&key).is_err());
    assert!(by_pair.check_key(&(key.0, 8)).is_ok());
}

#[test]
fn peeks_and_impossible_costs_store_nothing() {
    let l = keyed::<u64>(quota(2)).0;
    assert_eq!(l.key(&5).check_n(0).unwrap().remaining(), 2);
    let denied = l.key(&5).check_n(3).unwrap_err();
    assert_eq!(denied.retry_after(), None);
    assert_eq!(l.key(&5).available(), 2);
    assert_eq!(
        l.len(),
        0,
        "neither a peek nor an impossible cost created the key"
    );
}

#[test]
fn per_call_quota_serves_tiers_from_one_table() {
    let l = keyed::<&str>(quota(1)).0;
    let paid = quota(5);
    for i in 0..5 {
        assert!(
            l.key(&"paid").with_quota(paid).check_n(1).is_ok(),
            "paid request {i}"
        );
    }
    assert!(l.key(&"paid").with_quota(paid).check_n(1).is_err());
    l.check_key(&"free").unwrap();
    assert!(
        l.check_key(&"free").is_err(),
        "the default quota has burst 1"
    );
    // A quota is part of a bucket's identity: "paid" under the limiter's quota, and "free"
    // under the paid one, are buckets of their own, untouched; under the limiter's own quota
    // named again, "free" is the bucket it spent.
    assert_eq!(l.key(&"paid").available(), 1);
    assert_eq!(l.key(&"free").with_quota(paid).available(), 5);
    assert_eq!(l.key(&"free").with_quota(quota(1)).available(), 0);
    assert_eq!(l.len(), 2, "peeks create no bucket");
    l.clock().advance(Duration::from_nanos(T));
    assert_eq!(
        l.key(&"paid")
            .with_quota(paid)
            .check_n(1)
            .unwrap()
            .remaining(),
        0
    );
    let at = Nanos::new(T);
    let denied = l
        .at(at)
        .key(&"paid")
        .with_quota(paid)
        .check_n(1)
        .unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_nanos(T)));
}

#[test]
fn start_empty_keys_fill_over_one_depth() {
    let clock = ManualClock::new();
    clock.set(Nanos::new(1_000));
    let l = KeyedLimiter::<u64, _>::builder(quota(3))
        .clock(clock.clone())
        .max_keys(16)
        .start_empty(true)
        .build();
    assert_eq!(l.key(&1).available(), 0, "a new key starts empty");
    let denied = l.check_key(&1).unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_nanos(T)));
    clock.advance(Duration::from_nanos(T));
    assert!(
        l.check_key(&1).is_ok(),
        "one token after one interval since first seen"
    );
    clock.advance(Duration::from_nanos(3 * T));
    assert_eq!(l.key(&1).available(), 3);
}

#[test]
fn evict_idle_removes_only_full_buckets() {
    let l = keyed::<u64>(quota(2)).0;
    l.at(Nanos::ZERO).key(&1).check_n(1).unwrap(); // full again at T
    l.at(Nanos::ZERO).key(&2).check_n(2).unwrap(); // full again at 2T
    assert_eq!(l.len(), 2);
    assert_eq!(l.at(Nanos::new(T - 1)).evict_idle(), 0);
    assert_eq!(l.at(Nanos::new(T)).evict_idle(), 1);
    assert_eq!(l.len(), 1);
    assert_eq!(
        l.at(Nanos::new(T)).key(&2).available(),
        1,
        "key 2 kept its spend"
    );
    assert_eq!(l.at(Nanos::new(2 * T)).evict_idle(), 1);
    assert!(l.is_empty());
}

#[test]
fn a_full_window_follows_the_overflow_policy() {
    // 8 keys in 10 slots: more keys than slots forces the policy. Nothing is idle before 1 µs.
    let slow = Quota::try_new(Duration::from_micros(1), 1).unwrap();
    for policy in [OverflowPolicy::EvictNearestNew, OverflowPolicy::DenyNewKeys] {
        let l = KeyedLimiter::<u64, _>::builder(slow)
            .max_keys(8)
            .clock(ManualClock::new())
            .overflow(policy)
            .build();
        let slots = l.capacity() as u64;
        let mut denied = 0;
        for k in 0..slots + 5 {
            // Each key spends at a later time, so key k is nearer full than key k + 1.
            if l.at(Nanos::new(k)).key(&k).check_n(1).is_err() {
                denied += 1;
            }
        }
        let stats = l.stats();
        match policy {
            OverflowPolicy::EvictNearestNew => {
                assert_eq!((denied, stats.overflow_evictions), (0, 5));
                let kept = (0..slots + 5).filter(|k| l.at(Nanos::ZERO).key(k).available() == 0);
                assert_eq!(kept.count() as u64, slots, "evicted keys are full again");
                assert_eq!(
                    l.at(Nanos::ZERO).key(&0).available(),
                    1,
                    "key 0 was nearest full"
                );
            }
            _ => {
                assert_eq!((denied, stats.overflow_denials), (5, 5));
                assert_eq!(
                    l.at(Nanos::ZERO).key(&0).available(),
                    0,
                    "no key was forgotten"
                );
            }
        }
        assert_eq!(l.len() as u64, slots);
    }
}

#[test]
fn idle_keys_are_reclaimed_before_the_policy_applies() {
    let l = KeyedLimiter::<u64, _>::builder(quota(1))
        .max_keys(4)
        .clock(ManualClock::new())
        .overflow(OverflowPolicy::DenyNewKeys)
        .build();
    for k in 0..l.capacity() as u64 {
        l.at(Nanos::ZERO).key(&k).check_n(1).unwrap();
    }
    // At T every bucket is full again: new keys take idle slots, nothing is counted.
    for k in 100..100 + l.capacity() as u64 {
        l.at(Nanos::new(T)).key(&k).check_n(1).unwrap();
    }
    let stats = l.stats();
    assert_eq!((stats.overflow_evictions, stats.overflow_denials), (0, 0));
    assert_eq!(
        l.at(Nanos::new(T)).key(&0).available(),
        1,
        "a reclaimed idle key is full"
    );
}

#[test]
fn bad_capacities_are_errors() {
    let q = quota(1);
    let err = KeyedLimiter::<u64>::builder(q).max_keys(0).try_build();
    assert_eq!(err.err(), Some(KeyedBuildError::ZeroKeys));
    let err = KeyedLimiter::<u64>::builder(q)
        .max_keys(usize::MAX)
        .try_build();
    assert_eq!(
        err.err(),
        Some(KeyedBuildError::TooLarge {
            max_keys: usize::MAX
        })
    );
    // 2^44 keys: 352 TB of table, more than a 47-bit address space can map.
    let err = KeyedLimiter::<u64>::builder(q)
        .max_keys(1 << 44)
        .try_build();
    assert!(
        matches!(
            err,
            Err(KeyedBuildError::OutOfMemory { .. } | KeyedBuildError::TooLarge { .. })
        ),
        "{err:?}"
    );
}

#[test]
#[should_panic(expected = "max_keys must be at least 1")]
fn max_keys_zero_panics_in_build() {
    let _ = KeyedLimiter::<u64>::builder(quota(1)).max_keys(0).build();
}

#[test]
fn the_default_capacity_holds_a_million_keys() {
    let l = KeyedLimiter::<u64, _>::builder(Quota::per_hour(1))
        .clock(ManualClock::new())
        .overflow(OverflowPolicy::DenyNewKeys)
        .build();
    const { assert!(DEFAULT_MAX_KEYS >= 1_000_000) };
    let mut x: u64 = 0x243F_6A88_85A3_08D3;
    for _ in 0..1_000_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        assert!(l.check_key(&x).is_ok(), "a new key is admitted");
    }
    let stats = l.stats();
    let overflows = (stats.overflow_evictions, stats.overflow_denials);
    assert_eq!(overflows, (0, 0), "no overflow");
    assert_eq!(l.len(), 1_000_000);
}

#[test]
fn limiters_are_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<KeyedLimiter<String>>();
    shareable::<KeyedLimiter<std::rc::Rc<u8>, ManualClock>>();
}

#[test]
fn a_tier_given_to_the_handle_holds_for_every_operation() {
    use std::time::Duration as D;
    let clock = ManualClock::new();
    let free = Quota::per_second(1).with_burst(5);
    let pro = Quota::per_second(10).with_burst(50);
    let limiter = KeyedLimiter::<&str, _>::builder(free)
        .clock(clock.clone())
        .build();
    let alice = limiter.key("alice").with_quota(pro);
    assert_eq!(alice.available(), 50);
    assert!(alice.check_n(35).is_ok());
    let not_carried_out = alice.reserve(5, D::ZERO).unwrap();
    assert_eq!(alice.available(), 10);
    not_carried_out.cancel();
    assert_eq!(alice.available(), 15);
    let booked = alice.reserve(20, D::from_secs(1)).unwrap();
    assert_eq!(
        booked.ready_at().as_u64(),
        500_000_000,
        "5 tokens of 100 ms short"
    );
    booked.cancel();
    assert_eq!(alice.available(), 15);
    let global = cellrate::Limiter::with_clock(Quota::per_second(100), clock.clone());
    assert!(cellrate::all_of(&[(&alice, 15), (&global, 15)])
        .check()
        .is_ok());
    assert!(cellrate::all_of(&[(&alice, 1), (&global, 1)])
        .check()
        .is_err());
    assert_eq!(global.available(), 85, "the refused check was rolled back");
    assert!(
        alice.wait(1, D::ZERO).is_err(),
        "no token and no time to wait"
    );
    // Alice's bucket under the limiter's quota is another one, untouched by all of this; and
    // the limiter's quota is unchanged for other keys.
    assert_eq!(limiter.key("alice").available(), 5);
    assert_eq!(limiter.key("bob").available(), 5);
}

/// A key moving to another quota starts there as a new key does: full, or empty under
/// `start_empty`; what it spent stays with its bucket under the old quota, which it finds
/// again (as far as time has refilled it) when it moves back.
#[test]
fn a_key_that_changes_quota_starts_there_as_a_new_key() {
    let (free, pro) = (
        Quota::per_second(1).with_burst(5),
        Quota::per_second(10).with_burst(50),
    );
    for start_empty in [false, true] {
        let clock = ManualClock::new();
        let limiter = KeyedLimiter::<&str, _>::builder(free)
            .clock(clock.clone())
            .start_empty(start_empty)
            .build();
        let _ = limiter.key("alice").check_n(5); // empty under `free` either way
        assert_eq!(limiter.key("alice").available(), 0);
        let new = if start_empty { 0 } else { 50 };
        assert_eq!(limiter.key("alice").with_quota(pro).available(), new);
        clock.advance(Duration::from_secs(2));
        let _ = limiter.key("alice").with_quota(pro).check_n(20);
        assert_eq!(
            limiter.key("alice").available(),
            2,
            "start_empty {start_empty}"
        );
    }
}

/// Every operation of a keyed limiter has a form at a time passed in (`keyed.at(now)`, and a
/// handle from there), deciding exactly as the operation does when the limiter's clock reads
/// that time: one script, on a limiter read from its clock and on its twin given the times.
#[test]
fn every_keyed_operation_at_a_time_passed_in_decides_as_on_the_clock() {
    let (q, tier) = (Quota::per_second(10).with_burst(5), Quota::per_second(20));
    let (on_clock, clock) = keyed::<u8>(q);
    let (passed_in, _) = keyed::<u8>(q);
    let wait = Duration::from_millis(250);
    for (i, t) in [0, 0, 30, 120, 120, 450, 1_000, 1_020, 1_300, 3_000]
        .into_iter()
        .enumerate()
    {
        let (now, cost, k) = (ms(t), [1, 2, 3, 0][i % 4], (i % 3) as u8);
        clock.set(now);
        let at = passed_in.at(now);
        let what = format!("at {t} ms, key {k}");
        assert_eq!(on_clock.check_key(&k), at.check_key(&k), "check_key {what}");
        for (a, b) in [
            (on_clock.key(&k), at.key(&k)),
            (
                on_clock.key(&k).with_quota(tier),
                at.key(&k).with_quota(tier),
            ),
        ] {
            assert_eq!(a.check(), b.check(), "check {what}");
            assert_eq!(a.check_n(cost), b.check_n(cost), "check_n {what}");
            assert_eq!(a.available(), b.available(), "available {what}");
            let booked = (a.reserve(cost, wait), b.reserve(cost, wait));
            same_booking(booked, i, now, &format!("reserve {what}"));
        }
        let batch = [(&k, cost), (&3, 1), (&k, 1)];
        assert_eq!(on_clock.check_many(&batch), at.check_many(&batch), "{what}");
        assert_eq!(on_clock.evict_idle(), at.evict_idle(), "evict_idle {what}");
        assert_eq!(on_clock.len(), passed_in.len(), "{what}");
    }
}
