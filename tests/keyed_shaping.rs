//! Reservations and their give-backs, waiting and all-or-nothing checks on the buckets of a
//! keyed limiter.

use crate::common::{decision_time, keyed, ms};
use cellrate::{all_of, Clock, KeyedLimiter, Limit, ManualClock, Nanos, Quota};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(3600);

/// Ten a second, holding `burst`, per key.
fn ten_per_second(burst: u32) -> KeyedLimiter<&'static str, ManualClock> {
    keyed(Quota::per_second(10).with_burst(burst)).0
}

/// Three follow-up checks at `t`, `t + 50 ms` and `t + 100 ms`: a fingerprint of a bucket.
fn follow_up(l: &KeyedLimiter<&'static str, ManualClock>, key: &'static str, t: u64) -> Vec<bool> {
    [0, 50, 100]
        .iter()
        .map(|d| l.at(ms(t + d)).key(&key).check_n(1).is_ok())
        .collect()
}

#[test]
fn fifty_reservations_on_one_key_are_ready_in_booking_order_one_interval_apart() {
    let limiter = ten_per_second(1);
    let ready: Vec<Nanos> = (0..50)
        .map(|_| {
            let booked = limiter.at(Nanos::ZERO).key(&"a").reserve(1, LONG).unwrap();
            booked.ready_at()
        })
        .collect();
    assert_eq!(ready[0], Nanos::ZERO);
    for (i, pair) in ready.windows(2).enumerate() {
        assert_eq!(pair[1].as_u64() - pair[0].as_u64(), 100_000_000, "step {i}");
    }
    // Another key is untouched.
    assert!(limiter.at(Nanos::ZERO).key(&"b").check_n(1).is_ok());
}

#[test]
fn reservations_are_refused_past_max_wait_and_book_nothing() {
    let limiter = ten_per_second(1);
    let first = limiter.key(&"a").reserve(1, LONG).unwrap();
    assert_eq!(first.ready_at(), Nanos::ZERO);
    let refused = limiter
        .at(Nanos::ZERO)
        .key(&"a")
        .reserve(1, Duration::from_millis(99))
        .unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(100)));
    let second = limiter.at(Nanos::ZERO).key(&"a").reserve(1, LONG).unwrap();
    assert_eq!(second.ready_at(), ms(100), "the refusal booked nothing");
    let too_big = limiter
        .at(Nanos::ZERO)
        .key(&"a")
        .reserve(2, LONG)
        .unwrap_err();
    assert_eq!(too_big.retry_after(), None);
}

#[test]
fn cancelling_the_last_reservation_of_a_key_restores_it_exactly() {
    let (limiter, twin) = (ten_per_second(3), ten_per_second(3));
    for l in [&limiter, &twin] {
        l.at(Nanos::ZERO).key(&"a").check_n(2).unwrap();
    }
    let r = limiter.at(ms(20)).key(&"a").reserve(3, LONG).unwrap();
    assert!(limiter.at(ms(20)).key(&"a").available() < twin.at(ms(20)).key(&"a").available());
    r.cancel_at(ms(30));
    assert_eq!(follow_up(&limiter, "a", 30), follow_up(&twin, "a", 30));
}

#[test]
fn a_cancel_under_a_later_booking_gives_nothing_back() {
    let limiter = ten_per_second(1);
    let a = limiter.at(Nanos::ZERO).key(&"a").reserve(1, LONG).unwrap(); // slot ending 100
    let b = limiter.at(Nanos::ZERO).key(&"a").reserve(1, LONG).unwrap(); // ready 100
    a.cancel_at(Nanos::ZERO);
    let c = limiter.at(Nanos::ZERO).key(&"a").reserve(1, LONG).unwrap();
    assert!(c.ready_at() > b.ready_at(), "c must not share b's slot");
}

#[test]
fn settling_higher_puts_the_key_in_debt_and_lower_gives_back() {
    let limiter = ten_per_second(5);
    let r = limiter.at(Nanos::ZERO).key(&"a").reserve(2, LONG).unwrap();
    r.settle_at(8, Nanos::ZERO).unwrap(); // 8 tokens spent: 3 in debt
    let denied = limiter.at(Nanos::ZERO).key(&"a").check_n(1).unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_millis(400)));
    let r = limiter.at(Nanos::ZERO).key(&"b").reserve(4, LONG).unwrap();
    r.settle_at(1, Nanos::ZERO).unwrap();
    assert_eq!(limiter.at(Nanos::ZERO).key(&"b").available(), 4);
}

#[test]
fn give_backs_never_exceed_the_capacity_and_never_create_a_key() {
    let limiter = ten_per_second(5);
    let absent = limiter
        .at(Nanos::ZERO)
        .key(&"absent")
        .reserve(0, Duration::ZERO)
        .unwrap();
    absent.cancel_at(Nanos::ZERO);
    assert_eq!(limiter.len(), 0, "a give-back creates nothing");
    let kept = limiter.at(Nanos::ZERO).key(&"a").reserve(2, Duration::ZERO);
    let given = limiter.at(Nanos::ZERO).key(&"a").reserve(2, Duration::ZERO);
    given.unwrap().cancel_at(Nanos::ZERO);
    assert_eq!(limiter.at(Nanos::ZERO).key(&"a").available(), 3);
    kept.unwrap().cancel_at(Nanos::ZERO);
    assert_eq!(limiter.at(Nanos::ZERO).key(&"a").available(), 5);
    assert!(limiter.at(Nanos::ZERO).key(&"a").check_n(5).is_ok());
    assert!(limiter.at(Nanos::ZERO).key(&"a").check_n(1).is_err());
}

#[test]
fn all_of_a_key_and_a_global_limit_spends_in_both_or_neither() {
    let (per_user, clock) = keyed::<u64>(Quota::per_second(10).with_burst(3));
    let global = cellrate::Limiter::with_clock(Quota::per_second(10).with_burst(4), clock);
    let user = per_user.key(&7);
    assert!(all_of(&[(&user, 3), (&global, 3)]).check().is_ok());
    assert_eq!((per_user.key(&7).available(), global.available()), (0, 1));
    // The user refuses: the global limit keeps its token.
    let denied = all_of(&[(&global, 1), (&user, 1)]).check().unwrap_err();
    assert_eq!(global.available(), 1);
    assert_eq!(denied.retry_after(), Some(Duration::from_millis(100)));
    // The global limit refuses a different user: that user's new bucket is left full.
    let other = per_user.key(&8);
    assert!(all_of(&[(&other, 2), (&global, 2)]).check().is_err());
    assert_eq!(per_user.key(&8).available(), 3);
}

#[test]
fn concurrent_all_of_over_keys_never_admits_beyond_a_burst() {
    let (per_user, clock) = keyed::<u64>(Quota::per_second(10).with_burst(50));
    clock.set(ms(1_000));
    let global = cellrate::Limiter::with_clock(Quota::per_second(10).with_burst(120), clock);
    let admitted = [0u64, 1, 2].map(|_| AtomicU32::new(0));
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (per_user, global, admitted) = (&per_user, &global, &admitted);
            s.spawn(move || {
                for i in 0..200u64 {
                    let user = (t + i) % 3;
                    let key = per_user.key(&user);
                    let limits: [(&dyn Limit, u32); 2] = [(&key, 1), (global, 1)];
                    if all_of(&limits).check().is_ok() {
                        admitted[user as usize].fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let per_key: Vec<u32> = admitted.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    let total: u32 = per_key.iter().sum();
    assert_eq!(total, 120, "the global burst is spent exactly: {per_key:?}");
    for (user, &n) in per_key.iter().enumerate() {
        assert!(n <= 50, "user {user} admitted {n} > 50");
        assert_eq!(
            per_user.key(&(user as u64)).available(),
            50 - n,
            "user {user}: a trace"
        );
    }
    assert_eq!(global.available(), 0);
}

#[test]
fn wait_key_n_sleeps_in_booking_order() {
    let quota = Quota::per_second(20).with_burst(1);
    let limiter = KeyedLimiter::<&str>::new(quota);
    let (before, started) = (decision_time(limiter.clock(), &quota), Instant::now());
    for _ in 0..4 {
        limiter.key(&"a").wait(1, LONG).unwrap();
    }
    // The 4th is ready 3 intervals after the 1st, by the limiter's own time: never early.
    let waited = limiter.clock().now().saturating_duration_since(before);
    assert!(waited >= Duration::from_millis(150), "{waited:?}");
    // Nor 20 times later: a bound far above what a loaded machine adds to 150 ms of sleeps.
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    assert!(
        limiter.key(&"a").wait(2, LONG).is_err(),
        "cost above the burst"
    );
}
