//! `Limiter::set_quota`: what a bucket holds after its quota changes, rule by rule
//! (`QuotaChange`), bookings waiting across a change, all-or-nothing checks, threads and the
//! edges of the clock. (A keyed limiter's quota is fixed when it is built; a key under another
//! quota is another bucket: `keyed.rs`.)

use crate::common::{manual, quota, RULES};
use cellrate::{all_of, Limiter, Nanos, Quota, QuotaChange};
use std::time::Duration;

fn free() -> Quota {
    Quota::per_second(10).with_burst(10) // T = 100 ms, D = 1 s
}

fn pro() -> Quota {
    Quota::per_second(50).with_burst(500) // T = 20 ms, D = 10 s
}

/// Tokens available after spending `spent` under `from`, then moving to `to` by `how`.
fn after(spent: u32, from: Quota, to: Quota, how: QuotaChange) -> u32 {
    let limiter = manual(from).0;
    limiter.check_n(spent).unwrap();
    limiter.set_quota(to, how);
    assert_eq!(limiter.quota(), to);
    limiter.available()
}

#[test]
fn an_upgrade_by_each_rule() {
    assert_eq!(after(7, free(), pro(), QuotaChange::KeepSpent), 493);
    assert_eq!(after(7, free(), pro(), QuotaChange::KeepAvailable), 3);
    assert_eq!(after(7, free(), pro(), QuotaChange::Proportional), 150);
    assert_eq!(after(7, free(), pro(), QuotaChange::Full), 500);
    assert_eq!(after(7, free(), pro(), QuotaChange::Empty), 0);
    // The TAT kept: 700 ms from full is 35 tokens of 20 ms.
    assert_eq!(after(7, free(), pro(), QuotaChange::KeepTime), 465);
}

#[test]
fn a_downgrade_by_each_rule() {
    assert_eq!(after(497, pro(), free(), QuotaChange::KeepSpent), 0);
    assert_eq!(after(497, pro(), free(), QuotaChange::KeepAvailable), 3);
    assert_eq!(after(250, pro(), free(), QuotaChange::Proportional), 5);
    assert_eq!(after(497, pro(), free(), QuotaChange::Full), 10);
    assert_eq!(after(497, pro(), free(), QuotaChange::Empty), 0);
    assert_eq!(after(497, pro(), free(), QuotaChange::KeepTime), 0);
}

#[test]
fn a_full_bucket_stays_full_by_every_rule_but_empty() {
    for how in RULES.into_iter().filter(|&how| how != QuotaChange::Empty) {
        assert_eq!(after(0, free(), pro(), how), 500, "{how:?}");
        assert_eq!(after(0, pro(), free(), how), 10, "{how:?}");
    }
}

#[test]
fn a_whole_downgrade_by_the_default_waits_for_one_new_token() {
    assert_eq!(QuotaChange::default(), QuotaChange::KeepSpent);
    // All 500 of `pro` spent: 10 s from full. KeepTime keeps those 10 s.
    let kept_time = manual(pro()).0;
    kept_time.check_n(500).unwrap();
    kept_time.set_quota(free(), QuotaChange::KeepTime);
    let retry = kept_time.check().unwrap_err().retry_after();
    assert_eq!(
        retry,
        Some(Duration::from_millis(9_100)),
        "the 9 s of a kept TAT"
    );
    // The default keeps the spending, capped at the new burst: one token of the new quota.
    let limiter = manual(pro()).0;
    limiter.check_n(500).unwrap();
    limiter.set_quota(free(), QuotaChange::default());
    let retry = limiter.check().unwrap_err().retry_after();
    assert_eq!(
        retry,
        Some(Duration::from_millis(100)),
        "one token of the new quota"
    );
    assert_eq!(
        limiter.check_n(10).unwrap_err().retry_after(),
        Some(free().replenish_all())
    );
}

#[test]
fn the_default_never_makes_a_downgrade_wait_longer_than_the_new_depth() {
    for spent in [1, 10, 250, 499, 500] {
        let limiter = manual(pro()).0;
        limiter.check_n(spent).unwrap();
        limiter.set_quota(free(), QuotaChange::default());
        let full_in = limiter.check_n(0).unwrap().reset_after();
        assert!(full_in <= free().replenish_all(), "{spent}: {full_in:?}");
        if let Err(denied) = limiter.check() {
            assert!(denied.retry_after().unwrap() <= free().emission_interval());
        }
    }
    // KeepTime, for contrast, keeps the 9.98 s of the old quota.
    let limiter = manual(pro()).0;
    limiter.check_n(499).unwrap();
    limiter.set_quota(free(), QuotaChange::KeepTime);
    assert_eq!(
        limiter.check().unwrap_err().retry_after(),
        Some(Duration::from_millis(9_080))
    );
}

#[test]
fn later_checks_decide_under_the_new_quota_only() {
    let limiter = manual(free()).0;
    limiter.check_n(7).unwrap();
    limiter.set_quota(pro(), QuotaChange::KeepSpent);
    assert!(limiter.check_n(490).is_ok());
    let not_carried_out = limiter.reserve(3, Duration::ZERO).unwrap();
    let refused = limiter.check().unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(20)));
    assert_eq!(refused.reset_after(), pro().replenish_all());
    not_carried_out.cancel();
    assert_eq!(limiter.available(), 3);
    // A cost above the old burst passes under the new one, and the other way round.
    let small = manual(free()).0;
    assert!(small.check_n(11).is_err());
    small.set_quota(pro(), QuotaChange::Full);
    assert!(small.check_n(11).is_ok());
    small.set_quota(free(), QuotaChange::Full);
    assert_eq!(small.check_n(11).unwrap_err().retry_after(), None);
}

#[test]
fn many_changes_each_carry_the_bucket_over() {
    let limiter = manual(free()).0;
    for i in 0..1_000u32 {
        let (next, spent) = if i % 2 == 0 {
            (pro(), 500)
        } else {
            (free(), 10)
        };
        limiter.set_quota(next, QuotaChange::Full);
        assert_eq!(limiter.available(), spent, "change {i}");
        assert!(limiter.check_n(1).is_ok());
        assert_eq!(limiter.available(), spent - 1, "change {i}");
    }
}

#[test]
fn a_reservation_booked_before_a_change_keeps_its_place_and_gives_nothing_back() {
    let limiter = manual(free()).0;
    assert!(limiter.check_n(10).is_ok());
    let queued = limiter.reserve(5, Duration::from_secs(1)).unwrap();
    assert_eq!(queued.ready_at(), Nanos::new(500_000_000));
    // The booking waits (the bucket holds more than its depth): the downgrade takes effect
    // when it is ready, at s = TAT - D_old = 1.5 s - 1 s = 500 ms, with the bucket empty then
    // under the new quota (200 ms a token, D_new = 1 s): TAT = s + D_new = 1.5 s. A check at 0
    // passes once 1.5 s + 200 ms - 1 s = 700 ms have gone by.
    limiter.set_quota(quota(200_000_000, 5), QuotaChange::KeepSpent);
    let refused = limiter.check().unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(700)));
    // Booked under the old quota: its tokens are not the new quota's to give back.
    queued.cancel();
    assert_eq!(
        limiter.check().unwrap_err().retry_after(),
        Some(Duration::from_millis(700))
    );
}

/// Tokens booked ahead on a drained bucket keep their place whatever the rule: the change
/// takes effect once they are ready, the bucket empty then; KeepTime keeps the TAT if later.
#[test]
fn tokens_booked_ahead_keep_their_place_by_every_rule() {
    for how in RULES {
        let limiter = manual(pro()).0;
        assert!(limiter.check_n(500).is_ok());
        let queued = limiter.reserve(10, Duration::from_secs(1)).unwrap();
        let ready = queued.ready_at().as_u64();
        assert_eq!(ready, 200_000_000, "10 tokens of 20 ms in debt");
        // TAT 10.2 s, beyond the 10 s depth: the downgrade takes effect at s = 200 ms, the
        // bucket empty then under `free`: TAT = s + 1 s (for KeepTime the later 10.2 s). A check
        // at 0 waits for TAT + 100 ms - 1 s.
        limiter.set_quota(free(), how);
        let retry = limiter.check().unwrap_err().retry_after();
        let wait = if how == QuotaChange::KeepTime {
            9_300
        } else {
            300
        };
        assert_eq!(retry, Some(Duration::from_millis(wait)), "{how:?}");
        drop(queued);
    }
}

#[test]
fn settling_after_a_change_charges_more_under_the_new_quota_and_returns_nothing() {
    let limiter = manual(free()).0;
    let lower = limiter.reserve(6, Duration::ZERO).unwrap();
    let higher = limiter.reserve(2, Duration::ZERO).unwrap();
    limiter.set_quota(pro(), QuotaChange::KeepSpent);
    assert_eq!(limiter.available(), 492);
    lower.settle(1).unwrap();
    assert_eq!(
        limiter.available(),
        492,
        "no tokens of the old quota come back"
    );
    higher.settle(5).unwrap();
    assert_eq!(limiter.available(), 489, "3 more tokens of the new quota");
}

#[test]
fn a_reservation_after_a_change_is_exact_under_the_new_quota() {
    let limiter = manual(free()).0;
    limiter.set_quota(pro(), QuotaChange::Full);
    let booked = limiter.reserve(100, Duration::ZERO).unwrap();
    assert_eq!(limiter.available(), 400);
    booked.cancel();
    assert_eq!(limiter.available(), 500, "nothing since: exactly as before");
}

#[test]
fn all_of_rolls_back_in_the_quota_it_spent_under() {
    let (global, clock) = manual(free());
    global.set_quota(pro(), QuotaChange::Full);
    let user = Limiter::with_clock(free(), clock);
    assert!(all_of(&[(&global, 11), (&user, 11)]).check().is_err());
    assert_eq!(global.available(), 500, "rolled back exactly");
    assert!(all_of(&[(&global, 10), (&user, 10)]).check().is_ok());
    assert_eq!(global.available(), 490);
    user.set_quota(pro(), QuotaChange::KeepSpent);
    assert!(all_of(&[(&user, 491), (&global, 491)]).check().is_err());
    assert_eq!((user.available(), global.available()), (490, 490));
}

#[test]
fn a_change_at_a_stale_time_never_grants() {
    let limiter = manual(free()).0;
    limiter.at(Nanos::new(5_000_000_000)).check_n(10).unwrap();
    // At 4 s the bucket was one more depth from full than at 5 s: beyond its depth, so the
    // change takes effect at 5 s (TAT - D_old), the bucket empty then (TAT 6 s).
    limiter
        .at(Nanos::new(4_000_000_000))
        .set_quota(free(), QuotaChange::KeepSpent);
    assert_eq!(limiter.at(Nanos::new(5_000_000_000)).available(), 0);
    assert!(limiter.at(Nanos::new(5_000_000_000)).check_n(1).is_err());
}

#[test]
fn a_change_near_the_end_of_the_clock_is_denied_never_wrapped() {
    let end = u64::MAX - 5;
    let limiter = manual(quota(10, 5)).0;
    assert!(limiter.at(Nanos::new(end - 100)).check_n(1).is_ok());
    limiter
        .at(Nanos::new(end))
        .set_quota(quota(10, 5), QuotaChange::Empty);
    // Empty until past the end of the clock: the TAT stops one nanosecond short of it.
    let denied = limiter.at(Nanos::new(end)).check_n(1).unwrap_err();
    assert_eq!((denied.retry_after(), denied.remaining()), (None, 0));
    assert!(limiter.at(Nanos::MAX).check_n(1).is_err());
    assert!(
        limiter.at(Nanos::ZERO).check_n(1).is_err(),
        "no wrap to a small TAT"
    );
    // A spend whose TAT would be the clock's last nanosecond is denied on a changed limiter too.
    let changed = manual(quota(10, 5)).0;
    changed
        .at(Nanos::ZERO)
        .set_quota(quota(10, 5), QuotaChange::Full);
    assert!(changed.at(Nanos::new(u64::MAX - 11)).check_n(1).is_ok());
    let denied = changed
        .at(Nanos::new(u64::MAX - 11))
        .check_n(1)
        .unwrap_err();
    assert_eq!(denied.retry_after(), None);
}

#[test]
fn start_empty_after_a_change_keeps_the_new_quota() {
    let limiter = manual(free()).0;
    limiter.set_quota(pro(), QuotaChange::Full);
    let limiter = limiter.start_empty(true); // empty at the clock's 0
    assert_eq!(limiter.quota(), pro());
    assert_eq!(limiter.at(Nanos::new(10_000_000_000)).available(), 500);
}

#[test]
fn changes_racing_checks_on_threads_lose_no_spend() {
    // Every change is KeepTime between two quotas of one interval: the TAT moves only with
    // the spends, so the admitted count is that of one unchanged bucket: its burst.
    let limiter = manual(quota(1_000_000_000, 100)).0;
    std::thread::scope(|s| {
        let admitted: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    (0..200)
                        .filter(|_| limiter.at(Nanos::ZERO).check().is_ok())
                        .count()
                })
            })
            .collect();
        s.spawn(|| {
            for i in 0..200 {
                let burst = if i % 2 == 0 { 100 } else { 150 };
                limiter
                    .at(Nanos::ZERO)
                    .set_quota(quota(1_000_000_000, burst), QuotaChange::KeepTime);
            }
        });
        let total: usize = admitted.into_iter().map(|h| h.join().unwrap()).sum();
        assert!((100..=150).contains(&total), "{total}");
    });
}

/// KeepTime keeps the TAT: "the instant the bucket is full again does not move". A downgrade by
/// KeepTime leaves a drained bucket beyond the new depth, which the next change cannot tell
/// from one with bookings waiting: the upgrade back takes effect when such bookings would be
/// ready (at 50 s), with the bucket then empty (full at 200 s): never earlier than the
/// booking-free reading would make it, at the price of that 50 s.
#[test]
fn a_keep_time_round_trip_never_moves_the_full_again_instant_earlier() {
    let (big, small) = (quota(1_000_000_000, 150), quota(1_000_000_000, 100));
    let limiter = manual(big).0;
    limiter.check_n(150).unwrap(); // full again at 150 s
    limiter.set_quota(small, QuotaChange::KeepTime);
    assert_eq!(
        limiter.check_n(0).unwrap().reset_after(),
        Duration::from_secs(150)
    );
    limiter.set_quota(big, QuotaChange::KeepTime);
    assert_eq!(
        limiter.check_n(0).unwrap().reset_after(),
        Duration::from_secs(200)
    );
}
