//! Where two features meet on one bucket: the schedules that once admitted more than a token
//! bucket of the quota in force, or gave a booking back twice, each checked against the
//! replay oracle (`tests/oracle`) or the exact figures of the documented rule.

use crate::common::{ms, LaggingClock};
use crate::oracle::{Exact, Log};
use cellrate::{KeyedLimiter, Limiter, ManualClock, Nanos, OverflowPolicy, Quota, QuotaChange};
use std::time::Duration;

const NO_WAIT: Duration = Duration::ZERO;

/// A settle above its booking whose key was removed meanwhile, in a table with no room to make
/// the bucket again: the extra is not silently dropped, the settle says it was not charged and
/// when room comes. Under `DenyNewKeys`, and under `start_empty` with the default policy.
#[test]
fn a_settle_above_a_booking_whose_bucket_has_no_room_says_so() {
    // Under DenyNewKeys, keys starting full.
    let clock = ManualClock::new();
    let table = KeyedLimiter::<u64, _>::builder(Quota::per_second(10))
        .max_keys(1) // two slots
        .overflow(OverflowPolicy::DenyNewKeys)
        .clock(clock.clone())
        .build();
    let ticket = table.key(&1).reserve(1, NO_WAIT).unwrap().detach();
    clock.set(ms(1_000));
    assert_eq!(table.evict_idle(), 1, "key 1 is idle and removed");
    for key in [2u64, 3] {
        assert!(
            table.key(&key).check_n(10).is_ok(),
            "key {key} fills a slot"
        );
    }
    let refused = table.attach(ticket).unwrap().settle(100).unwrap_err();
    assert_eq!(
        refused.retry_after(),
        Some(Duration::from_secs(1)),
        "when 2 or 3 is full"
    );

    // Under start_empty with the default policy: no bucket that is not full makes room.
    let clock = ManualClock::new();
    let table = KeyedLimiter::<u64, _>::builder(Quota::per_second(10))
        .max_keys(1)
        .start_empty(true)
        .clock(clock.clone())
        .build();
    let wait = Duration::from_secs(2);
    let ticket = table.key(&1).reserve(1, wait).unwrap().detach(); // empty at 0: ready 100 ms
    clock.set(ms(3_000));
    assert_eq!(
        table.evict_idle(),
        1,
        "key 1 is idle and removed (and comes back full)"
    );
    for key in [2u64, 3] {
        assert!(
            table.key(&key).reserve(10, wait).is_ok(),
            "key {key} fills a slot"
        );
    }
    let refused = table.attach(ticket).unwrap().settle(100).unwrap_err();
    assert_eq!(
        refused.retry_after(),
        Some(Duration::from_secs(2)),
        "when 2 or 3 is full"
    );
}

/// The same settle where the default policy may make room: the extra lands on the key, which
/// then waits out its 99 tokens of debt (9.9 s), and the bucket removed for it is counted.
#[test]
fn a_settle_above_a_removed_booking_lands_where_room_can_be_made() {
    let clock = ManualClock::new();
    let table = KeyedLimiter::<u64, _>::builder(Quota::per_second(10))
        .max_keys(1)
        .clock(clock.clone())
        .build();
    let ticket = table.key(&1).reserve(1, NO_WAIT).unwrap().detach();
    clock.set(ms(1_000));
    assert_eq!(table.evict_idle(), 1);
    for key in [2u64, 3] {
        assert!(table.key(&key).check_n(10).is_ok());
    }
    assert!(table.attach(ticket).unwrap().settle(100).is_ok());
    assert_eq!(table.stats().overflow_evictions, 1);
    clock.set(ms(1_200));
    let denied = table.check_key(&1).unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_millis(8_800))); // full at 10.9 s
}

/// A new key in a full table judges the others idle on the table's one reading: a bucket whose
/// debt the lagging reading still sees is not removed, so its key cannot come back full.
/// Before, a key under a shallow quota read the exact time while the others read the cached
/// one, and removed them a lag early.
#[test]
fn a_new_key_never_removes_a_bucket_the_tables_reading_sees_in_debt() {
    let clock = LaggingClock::new(Duration::from_millis(1), Duration::from_millis(1));
    clock.set_lag(Duration::from_millis(1));
    let deep = Quota::per_second(100).with_burst(16); // 160 ms deep: the cached reading
    let shallow = Quota::per_second(1_000_000); // 1 ms deep
    let table = KeyedLimiter::<u64, _>::builder(deep)
        .max_keys(1)
        .start_empty(true)
        .clock(clock.clone())
        .build();
    let mut log = Log::default();
    clock.truth.set(ms(10));
    for key in [1u64, 2] {
        assert!(table.key(&key).check_n(0).is_ok()); // seen at the reading 9 ms: empty
    }
    clock.truth.set(ms(400)); // the reading 399 ms: both full
    for key in [1u64, 2] {
        assert!(table.key(&key).check_n(16).is_ok()); // full again at 559 ms
    }
    log.checked(16, ms(399).as_u64());
    clock.truth.set(Nanos::new(559_500_000)); // the exact time is past 559 ms, the reading not
    assert!(
        table.key(&3).with_quota(shallow).check().is_err(),
        "no room: keys 1 and 2 are not full at the table's reading"
    );
    assert!(table.key(&1).check_n(16).is_err(), "key 1 kept its bucket");
    assert!(table.key(&1).check_n(15).is_ok());
    log.checked(15, Nanos::new(558_500_000).as_u64());
    let start = Exact::empty_at(deep, ms(9).as_u64());
    assert_eq!(log.replay(start, deep), Ok(2));
}

/// A key removed as idle at one reading and checked at an earlier one (a reading taken before
/// the removal, decided after it) starts no earlier than the removal's reading: it never gets
/// more than the bucket it lost would have given.
#[test]
fn a_key_removed_at_one_reading_and_back_at_an_earlier_one_gets_no_more_than_it_had() {
    let q = Quota::per_second(100).with_burst(10); // 10 ms a token, 100 ms deep
    let table = KeyedLimiter::<u64, _>::builder(q)
        .clock(ManualClock::new())
        .build();
    assert!(table.at(ms(0)).key(&1).check_n(9).is_ok()); // full again at 90 ms
    assert_eq!(table.at(ms(100)).evict_idle(), 1);
    // Kept, the bucket would hold 6 tokens at 50 ms; new from the removal's reading, 5.
    let available = table.at(ms(50)).key(&1).available();
    assert!(available <= 6, "{available} tokens at 50 ms");
    let admitted = (0..10)
        .filter(|_| table.at(ms(50)).check_key(&1).is_ok())
        .count();
    assert_eq!(admitted, 5);
}

/// One key under two quotas is two buckets: a booking given back under one quota gives
/// nothing to the other, whatever readings either uses, and each bucket replays exactly.
#[test]
fn a_give_back_under_one_quota_never_reaches_the_keys_bucket_under_another() {
    let clock = LaggingClock::new(Duration::from_millis(1), Duration::from_millis(2));
    let deep = Quota::per_second(1_000).with_burst(1_000); // 1 s deep
    let shallow = Quota::per_second(1_000_000).with_burst(8); // 8 us deep
    let table = KeyedLimiter::<u64, _>::builder(deep)
        .clock(clock.clone())
        .build();
    clock.truth.set(ms(5));
    clock.set_lag(Duration::from_millis(2)); // every operation reads 3 ms
    let booking = table.key(&7).reserve(500, NO_WAIT).unwrap();
    assert!(table.key(&7).with_quota(shallow).check_n(8).is_ok());
    booking.cancel(); // back exactly: nothing came between on its bucket
    assert_eq!(table.key(&7).available(), 1_000);
    assert_eq!(table.key(&7).with_quota(shallow).available(), 0);
    let admitted = (0..20)
        .filter(|_| table.key(&7).with_quota(shallow).check().is_ok())
        .count();
    assert_eq!(admitted, 0, "the shallow bucket got nothing back");
}

/// A cancel after a quota change never lowers the bucket beneath a booking made under the new
/// quota. X books 5 under 10/s (burst 10), the quota drops to burst 3, Y books 3, X is
/// cancelled: from 100 ms to 500 ms at most 7 tokens are used (3 + 400 ms of refill).
#[test]
fn a_cancel_after_a_downgrade_never_lowers_a_booking_of_the_new_quota() {
    for how in [QuotaChange::KeepSpent, QuotaChange::KeepTime] {
        let q1 = Quota::per_second(10);
        let q2 = Quota::per_second(10).with_burst(3);
        let limiter = Limiter::with_clock(q1, ManualClock::new());
        let mut log = Log::default();
        let x = limiter
            .at(ms(0))
            .reserve(5, Duration::from_secs(1))
            .unwrap();
        let x_id = log.booked(5, x.ready_at().as_u64());
        limiter.at(ms(0)).set_quota(q2, how);
        log.changed(q2, how, 0);
        let y = limiter
            .at(ms(0))
            .reserve(3, Duration::from_secs(1))
            .unwrap();
        log.booked(3, y.ready_at().as_u64());
        x.cancel_at(ms(100));
        log.cancelled(x_id);
        let mut used = 3;
        for t in (100..=500).step_by(10) {
            if limiter.at(ms(t)).check().is_ok() {
                log.checked(1, ms(t).as_u64());
                used += 1;
            }
        }
        assert!(used <= 7, "{used} tokens in [100 ms, 500 ms] under {how:?}");
        assert!(log.replay(Exact::full(q1), q1).is_ok(), "{how:?}");
    }
}

/// An upgrade while a booking waits: the booking keeps its ready time, and nothing decided under
/// the new quota is ready before it: at 10 s only the booking's 10 tokens are used, whatever
/// the rule.
#[test]
fn an_upgrade_never_lets_new_requests_overlap_a_waiting_booking() {
    let old = Quota::per_second(1).with_burst(10);
    let new = Quota::per_second(100).with_burst(10);
    for how in [
        QuotaChange::KeepSpent,
        QuotaChange::KeepAvailable,
        QuotaChange::Proportional,
        QuotaChange::KeepTime,
        QuotaChange::Full,
        QuotaChange::Empty,
    ] {
        let limiter = Limiter::with_clock(old, ManualClock::new());
        let mut log = Log::default();
        assert!(limiter.at(ms(0)).check_n(10).is_ok());
        log.checked(10, 0);
        let booking = limiter
            .at(ms(0))
            .reserve(10, Duration::from_secs(10))
            .unwrap();
        assert_eq!(booking.ready_at(), ms(10_000));
        log.booked(10, ms(10_000).as_u64());
        limiter.at(ms(0)).set_quota(new, how);
        log.changed(new, how, 0);
        for t in (0..=10_000).step_by(500).chain([10_005]) {
            assert!(
                limiter.at(ms(t)).check().is_err(),
                "{how:?}: a check at {t} ms would use the booking's time"
            );
        }
        // Empty under the new quota as the booking is ready; KeepTime keeps the later TAT.
        let first = if how == QuotaChange::KeepTime {
            20_000 - 90
        } else {
            10_010
        };
        assert!(limiter.at(ms(first - 1)).check().is_err(), "{how:?}");
        assert!(limiter.at(ms(first)).check().is_ok(), "{how:?}");
        log.checked(1, ms(first).as_u64());
        assert_eq!(log.replay(Exact::full(old), old), Ok(3), "{how:?}");
    }
}

/// A ticket is used once: attached to another limiter it comes back, and attached to its own
/// it becomes the one reservation it was (a second give-back cannot be written: see the
/// `compile_fail` examples of `Ticket`).
#[test]
fn a_ticket_comes_back_from_another_limiter_and_gives_back_once() {
    let a = Limiter::with_clock(Quota::per_second(10), ManualClock::new());
    let b = Limiter::with_clock(Quota::per_second(10), ManualClock::new());
    assert!(a.check_n(5).is_ok());
    let ticket = a.reserve(5, NO_WAIT).unwrap().detach();
    let ticket = b.attach(ticket).expect_err("b did not issue it");
    a.attach(ticket).unwrap().cancel();
    assert_eq!(a.available(), 5, "the booking, and only it, came back");
    assert_eq!(b.available(), 10);
}

/// A reservation's `until_ready` future cancels the booking when dropped, polled or not.
#[cfg(feature = "async")]
#[test]
fn an_until_ready_future_dropped_unpolled_gives_its_booking_back() {
    let limiter = Limiter::with_clock(Quota::per_second(10), ManualClock::new());
    assert!(limiter.check_n(5).is_ok());
    let future = limiter
        .reserve(5, Duration::from_secs(1))
        .unwrap()
        .until_ready();
    drop(future);
    assert_eq!(limiter.available(), 5);
    let waiting = limiter.until_ready(5, Duration::from_secs(1));
    drop(waiting);
    assert_eq!(limiter.available(), 5, "an unpolled wait books nothing");
}
