//! Floods of new keys against the keys a table holds, under every overflow policy, with keys
//! starting full or empty: new keys that book ahead (stored in debt) or are only checked, on
//! tables of one to four keys' capacity, beside an exact bucket per held key. A
//! request of one key never changes what another key holds, but for a reset to full in a
//! table that starts keys full (which costs nothing); a held key decides as the exact bucket
//! of its own requests; and a new key with no room is refused with the time until there is
//! room, its wait waiting for it.

use crate::common::{ms, until_judged};
use crate::oracle::Exact;
use cellrate::{Clock, KeyedLimiter, ManualClock, MonotonicClock, Nanos, OverflowPolicy, Quota};
use std::time::Duration;

const POLICIES: [OverflowPolicy; 2] =
    [OverflowPolicy::EvictNearestNew, OverflowPolicy::DenyNewKeys];

fn table(
    max_keys: usize,
    policy: OverflowPolicy,
    start_empty: bool,
) -> KeyedLimiter<u64, ManualClock> {
    KeyedLimiter::<u64, _>::builder(Quota::per_second(10))
        .max_keys(max_keys)
        .clock(ManualClock::new())
        .overflow(policy)
        .start_empty(start_empty)
        .build()
}

/// Under `start_empty`, a flood of new keys, each checked (stored empty) or booking ahead (a
/// `reserve`, `wait` or `until_ready` of a key never seen: stored in debt). No bucket that is
/// not full may make room there, under either policy: the flood fills the free slots, then is
/// refused, and the key that held 9 of its 10 tokens keeps them.
#[test]
fn a_flood_of_new_keys_booking_ahead_under_start_empty_cannot_empty_a_key() {
    for policy in POLICIES {
        for book_ahead in [true, false] {
            let limiter = table(800, policy, true);
            let victim = u64::MAX;
            assert!(limiter.at(ms(0)).check_key(&victim).is_err());
            let full = ms(1_000);
            assert!(limiter.at(full).check_key(&victim).is_ok()); // 9 of 10 left
            for flood in 0..20_000u64 {
                let _ = if book_ahead {
                    limiter
                        .at(full)
                        .key(&flood)
                        .reserve(1, Duration::from_secs(1))
                        .map(|r| r.allowed())
                } else {
                    limiter.at(full).check_key(&flood)
                };
            }
            let how = format!("{policy:?}, booking ahead {book_ahead}");
            assert_eq!(
                limiter.at(full).key(&victim).available(),
                9,
                "{how}: the flood emptied a key that held tokens"
            );
            let stats = limiter.stats();
            assert_eq!(stats.overflow_evictions, 0, "{how}");
            assert!(
                stats.overflow_denials > 10_000,
                "{how}: the flood overflowed"
            );
        }
    }
}

/// The refusal of a new key for lack of room under `start_empty` says when room comes: when the
/// bucket nearest to full in its window is full. Then the key gets a bucket, empty.
#[test]
fn a_new_key_refused_for_room_under_start_empty_is_told_when_room_comes() {
    let limiter = table(1, OverflowPolicy::EvictNearestNew, true);
    assert!(limiter.at(ms(0)).check_key(&1).is_err()); // empty, full at 1 s
    assert!(limiter.at(ms(500)).check_key(&2).is_err()); // full at 1.5 s
    let refused = limiter.at(ms(600)).check_key(&3).unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(400)));
    assert_eq!(limiter.stats().overflow_denials, 1);
    assert_eq!(limiter.at(ms(600)).key(&1).available(), 6);
    // At 1 s key 1 is full: its slot goes to key 3, and key 1 comes back full.
    assert!(
        limiter.at(ms(1_000)).check_key(&3).is_err(),
        "key 3 starts empty"
    );
    assert_eq!(limiter.at(ms(1_000)).key(&1).available(), 10);
    assert_eq!(limiter.at(ms(1_100)).key(&3).available(), 1);
    assert_eq!(limiter.stats().overflow_evictions, 0);
}

/// Two slots held by keys full again 30 ms and 60 ms after they were first seen (start empty):
/// a third key's wait (100 ms deep, so that both are less than a depth from full) waits for
/// room, then for its own token, and empties no one.
#[test]
fn a_new_keys_wait_under_start_empty_waits_for_room() {
    // A run in which this thread is kept off the cores until the first key is full, before the
    // third key is refused for room, is not judged.
    let quota = |ms| Quota::try_new(Duration::from_millis(ms), 1).unwrap();
    until_judged("a_new_keys_wait_under_start_empty_waits_for_room", || {
        let limiter = KeyedLimiter::<u32, _>::builder(Quota::per_second(100).with_burst(1))
            .max_keys(1)
            .clock(MonotonicClock::new())
            .start_empty(true)
            .build();
        let before = limiter.clock().now();
        let _ = limiter.key(&1).with_quota(quota(30)).check();
        let _ = limiter.key(&2).with_quota(quota(60)).check();
        let deep = quota(100);
        let refused = limiter.key(&3).with_quota(deep).reserve(1, Duration::ZERO);
        if limiter.stats().overflow_denials == 0 {
            return false;
        }
        assert!(refused.is_err());
        assert_eq!(limiter.stats().overflow_denials, 1, "refused for room");
        limiter
            .key(&3)
            .with_quota(deep)
            .wait(1, Duration::MAX)
            .unwrap();
        // Room 30 ms after the first key's check, then the new key's own 100 ms from empty,
        // by the limiter's own (exact) time.
        let waited = limiter.clock().now().saturating_duration_since(before);
        assert!(waited >= Duration::from_millis(130), "{waited:?}");
        assert_eq!(limiter.stats().overflow_evictions, 0);
        // A wait bounded by less than the time until its token (or room) is refused.
        assert!(limiter.key(&4).wait(1, Duration::from_millis(1)).is_err());
        true
    });
}

/// One schedule on a table of `max_keys` keys' capacity: `held` keys (one slot fewer than the
/// table has) are seen at 0, then every step is a request of one of them or of a key never
/// seen (a check, or a booking ahead kept, under the default quota, the held keys' or a short
/// one, so that some flood keys soon become full and make room), or a sweep. The clock moves less than
/// a depth of the default quota in all, so a held key is never full and never idle.
fn schedule(max_keys: usize, policy: OverflowPolicy, start_empty: bool, seed: u64) {
    let limiter = table(max_keys, policy, start_empty);
    let quota = Quota::per_second(10).with_burst(50); // 5 s deep
    let short = Quota::try_new(Duration::from_millis(1), 2).unwrap();
    let held: Vec<u64> = (0..limiter.capacity() as u64 - 1).collect();
    let start = if start_empty {
        Exact::empty_at(quota, 0)
    } else {
        Exact::full(quota)
    };
    let mut oracles = vec![start; held.len()];
    // Where a key removed for a new one comes back full, it may hold more than its exact
    // bucket: only the other keys' tokens are compared there, never to drop.
    let resets_refill = !start_empty && policy == OverflowPolicy::EvictNearestNew;
    let mut rng = fastrand::Rng::with_seed(seed | 1);
    let mut now = 0u64;
    let mut fresh = 1u64 << 40;
    let what = |step: usize| {
        format!(
            "{policy:?}, start_empty {start_empty}, max_keys {max_keys}, seed {seed}, step {step}"
        )
    };
    for (&key, exact) in held.iter().zip(&mut oracles) {
        let got = limiter
            .at(Nanos::ZERO)
            .key(&key)
            .with_quota(quota)
            .check_n(1);
        assert_eq!(got.is_ok(), exact.take(1, 0));
    }
    for step in 0..600 {
        now += rng.u64(..8) * 1_000_000; // at most 4.2 s in all
        let at = Nanos::new(now);
        let before: Vec<u32> = held
            .iter()
            .map(|k| limiter.at(at).key(k).with_quota(quota).available())
            .collect();
        let denials = limiter.stats().overflow_denials;
        let cost = 1 + rng.u64(..3) as u32;
        let wait = Duration::from_millis(rng.u64(..3) * 100);
        let actor = match rng.u64(..10) {
            0..=3 => {
                let h = rng.u64(..held.len() as u64) as usize;
                let key = limiter.at(at).key(&held[h]).with_quota(quota);
                let nanos = wait.as_nanos() as u64;
                let check = rng.u64(..2) == 0;
                let got = if check {
                    key.check_n(cost).is_ok()
                } else {
                    key.reserve(cost, wait).map(|r| r.allowed()).is_ok()
                };
                if limiter.stats().overflow_denials > denials {
                    // Refused for room: nothing carried out, the exact bucket is not asked.
                    assert!(!got, "{}: admitted and refused for room", what(step));
                    assert!(!start_empty, "{}: a held key lost its slot", what(step));
                } else if !resets_refill {
                    let want = if check {
                        oracles[h].take(cost, now)
                    } else {
                        // A booking ready within `wait`: the tokens there `wait` later, were
                        // nothing else spent, and spent now, into debt.
                        let mut later = oracles[h];
                        let booked = later.take(cost, now + nanos);
                        if booked {
                            oracles[h].charge(cost, now);
                        }
                        booked
                    };
                    assert_eq!(
                        got,
                        want,
                        "{}: held key {h} against its exact bucket",
                        what(step)
                    );
                }
                Some(h)
            }
            4..=8 => {
                fresh += 1;
                let key = limiter.at(at).key(&fresh);
                let key = match rng.u64(..3) {
                    0 => key,
                    1 => key.with_quota(quota),
                    _ => key.with_quota(short),
                };
                if rng.u64(..3) == 0 {
                    let _ = key.check_n(1);
                } else {
                    let _ = key.reserve(cost, wait).map(|r| r.allowed());
                }
                None
            }
            _ => {
                limiter.at(at).evict_idle();
                None
            }
        };
        for (h, key) in held.iter().enumerate().filter(|&(h, _)| Some(h) != actor) {
            let after = limiter.at(at).key(key).with_quota(quota).available();
            if resets_refill {
                assert!(
                    after >= before[h],
                    "{}: held key {h} lost tokens ({} to {after})",
                    what(step),
                    before[h]
                );
            } else {
                assert_eq!(
                    after,
                    before[h],
                    "{}: held key {h} changed by another's request",
                    what(step)
                );
            }
        }
    }
    if start_empty {
        assert_eq!(limiter.stats().overflow_evictions, 0, "{}", what(600));
    }
}

#[test]
fn floods_on_tiny_tables_never_cost_a_held_key_a_token() {
    for max_keys in 1..=4 {
        for policy in POLICIES {
            for start_empty in [true, false] {
                for seed in 0..20 {
                    schedule(
                        max_keys,
                        policy,
                        start_empty,
                        seed * 0x9E37_79B9 + max_keys as u64,
                    );
                }
            }
        }
    }
}
