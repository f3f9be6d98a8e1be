//! `Limiter::set_quota` and `KeyedLimiter::set_default_quota`: the default rule, reservations
//! and all-or-nothing checks across a change, threads, and the edges of the clock. (Each
//! strategy's figures are in `quota_change.rs`.)

use crate::common;

use cellrate::{all_of, KeyedLimiter, Limiter, ManualClock, Nanos, Quota, QuotaChange};
use common::{at, quota};
use std::time::Duration;

fn free() -> Quota {
    Quota::per_second(10).with_burst(10) // T = 100 ms, D = 1 s
}

fn pro() -> Quota {
    Quota::per_second(50).with_burst(500) // T = 20 ms, D = 10 s
}

fn limiter(quota: Quota) -> Limiter<ManualClock> {
    Limiter::with_clock(quota, ManualClock::new())
}

#[test]
fn the_default_never_makes_a_downgrade_wait_longer_than_the_new_depth() {
    for spent in [1, 10, 250, 499, 500] {
        let limiter = limiter(pro());
        limiter.check_n(spent).unwrap();
        limiter.set_quota(free(), QuotaChange::default());
        let full_in = limiter.check_n(0).unwrap().reset_after();
        assert!(full_in <= free().replenish_all(), "{spent}: {full_in:?}");
        if let Err(denied) = limiter.check() {
            assert!(denied.retry_after().unwrap() <= free().emission_interval());
        }
    }
    // KeepTime, for contrast, keeps the 9.98 s of the old quota.
    let limiter = limiter(pro());
    limiter.check_n(499).unwrap();
    limiter.set_quota(free(), QuotaChange::KeepTime);
    assert_eq!(
        limiter.check().unwrap_err().retry_after(),
        Some(Duration::from_millis(9_080))
    );
}

#[test]
fn later_checks_decide_under_the_new_quota_only() {
    let limiter = limiter(free());
    limiter.check_n(7).unwrap();
    limiter.set_quota(pro(), QuotaChange::KeepSpent);
    assert!(limiter.check_n(490).is_ok());
    let not_carried_out = limiter.reserve_n(3, Duration::ZERO).unwrap();
    let refused = limiter.check().unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(20)));
    assert_eq!(refused.reset_after(), pro().replenish_all());
    not_carried_out.cancel();
    assert_eq!(limiter.available(), 3);
    // A cost above the old burst passes under the new one, and the other way round.
    let small = self::limiter(free());
    assert!(small.check_n(11).is_err());
    small.set_quota(pro(), QuotaChange::Full);
    assert!(small.check_n(11).is_ok());
    small.set_quota(free(), QuotaChange::Full);
    assert_eq!(small.check_n(11).unwrap_err().retry_after(), None);
}

#[test]
fn many_changes_each_carry_the_bucket_over() {
    let limiter = limiter(free());
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
    let limiter = limiter(free());
    assert!(limiter.check_n(10).is_ok());
    let queued = limiter.reserve_n(5, Duration::from_secs(1)).unwrap();
    assert_eq!(queued.ready_at(), at(500_000_000));
    // A downgrade keeps the 5 tokens booked beyond the empty bucket as 5 new tokens: a check
    // after the change waits for them, then for one of its own.
    limiter.set_quota(quota(200_000_000, 5), QuotaChange::KeepSpent);
    let refused = limiter.check().unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(1_200)));
    // Booked under the old quota: its tokens are not the new quota's to give back.
    queued.cancel();
    assert_eq!(
        limiter.check().unwrap_err().retry_after(),
        Some(Duration::from_millis(1_200))
    );
}

#[test]
fn settling_after_a_change_charges_more_under_the_new_quota_and_returns_nothing() {
    let limiter = limiter(free());
    let lower = limiter.reserve_n(6, Duration::ZERO).unwrap();
    let higher = limiter.reserve_n(2, Duration::ZERO).unwrap();
    limiter.set_quota(pro(), QuotaChange::KeepSpent);
    assert_eq!(limiter.available(), 492);
    lower.settle(1);
    assert_eq!(
        limiter.available(),
        492,
        "no tokens of the old quota come back"
    );
    higher.settle(5);
    assert_eq!(limiter.available(), 489, "3 more tokens of the new quota");
}

#[test]
fn a_reservation_after_a_change_is_exact_under_the_new_quota() {
    let limiter = limiter(free());
    limiter.set_quota(pro(), QuotaChange::Full);
    let booked = limiter.reserve_n(100, Duration::ZERO).unwrap();
    assert_eq!(limiter.available(), 400);
    booked.cancel();
    assert_eq!(limiter.available(), 500, "nothing since: exactly as before");
}

#[test]
fn all_of_rolls_back_in_the_quota_it_spent_under() {
    let clock = ManualClock::new();
    let global = Limiter::with_clock(free(), clock.clone());
    global.set_quota(pro(), QuotaChange::Full);
    let user = Limiter::with_clock(free(), clock.clone());
    assert!(all_of(&[&global, &user]).check_n(11).is_err());
    assert_eq!(global.available(), 500, "rolled back exactly");
    assert!(all_of(&[&global, &user]).check_n(10).is_ok());
    assert_eq!(global.available(), 490);
    user.set_quota(pro(), QuotaChange::KeepSpent);
    assert!(all_of(&[&user, &global]).check_n(491).is_err());
    assert_eq!((user.available(), global.available()), (490, 490));
}

#[test]
fn a_change_at_a_stale_time_never_grants() {
    let limiter = limiter(free());
    limiter.check_n_at(10, at(5_000_000_000)).unwrap();
    // At 4 s the bucket was one more depth from full than at 5 s.
    limiter.set_quota_at(free(), QuotaChange::KeepSpent, at(4_000_000_000));
    assert_eq!(limiter.available_at(at(5_000_000_000)), 0);
    assert!(limiter.check_n_at(1, at(5_000_000_000)).is_err());
}

#[test]
fn a_change_near_the_end_of_the_clock_is_denied_never_wrapped() {
    let end = u64::MAX - 5;
    let limiter = limiter(quota(10, 5));
    assert!(limiter.check_n_at(1, at(end - 100)).is_ok());
    limiter.set_quota_at(quota(10, 5), QuotaChange::Empty, at(end));
    // Empty until past the end of the clock: the TAT stops one nanosecond short of it.
    let denied = limiter.check_n_at(1, at(end)).unwrap_err();
    assert_eq!((denied.retry_after(), denied.remaining()), (None, 0));
    assert!(limiter.check_n_at(1, Nanos::MAX).is_err());
    assert!(
        limiter.check_n_at(1, at(0)).is_err(),
        "no wrap to a small TAT"
    );
    // A spend whose TAT would be the clock's last nanosecond is denied on a changed limiter too.
    let changed = self::limiter(quota(10, 5));
    changed.set_quota_at(quota(10, 5), QuotaChange::Full, at(0));
    assert!(changed.check_n_at(1, at(u64::MAX - 11)).is_ok());
    let denied = changed.check_n_at(1, at(u64::MAX - 11)).unwrap_err();
    assert_eq!(denied.retry_after(), None);
}

#[test]
fn start_empty_after_a_change_keeps_the_new_quota() {
    let limiter = limiter(free());
    limiter.set_quota(pro(), QuotaChange::Full);
    let limiter = limiter.start_empty_at(true, at(0));
    assert_eq!(limiter.quota(), pro());
    assert_eq!(limiter.available_at(at(10_000_000_000)), 500);
}

#[test]
fn changes_racing_checks_on_threads_lose_no_spend() {
    // Every change is KeepTime between two quotas of one interval: the TAT moves only with
    // the spends, so the admitted count is that of one unchanged bucket: its burst.
    let limiter = limiter(quota(1_000_000_000, 100));
    std::thread::scope(|s| {
        let admitted: Vec<_> = (0..2)
            .map(|_| s.spawn(|| (0..200).filter(|_| limiter.check_at(at(0)).is_ok()).count()))
            .collect();
        s.spawn(|| {
            for i in 0..200 {
                let burst = if i % 2 == 0 { 100 } else { 150 };
                limiter.set_quota_at(quota(1_000_000_000, burst), QuotaChange::KeepTime, at(0));
            }
        });
        let total: usize = admitted.into_iter().map(|h| h.join().unwrap()).sum();
        assert!((100..=150).contains(&total), "{total}");
    });
}

mod keyed_default {
    use super::{free, pro};
    use cellrate::{KeyedLimiter, ManualClock, QuotaChange};
    use std::time::Duration;

    fn limiter() -> (KeyedLimiter<u8, ManualClock>, ManualClock) {
        let clock = ManualClock::new();
        (KeyedLimiter::with_clock(free(), clock.clone()), clock)
    }

    #[test]
    fn new_keys_take_the_new_default_and_held_keys_keep_their_time() {
        let (limiter, clock) = limiter();
        limiter.check_key_n(&1, 10).unwrap(); // 1 s from full
        limiter.set_default_quota(pro());
        assert_eq!(limiter.quota(), pro());
        assert_eq!(limiter.key(&1).available(), 450, "1 s of 20 ms tokens");
        assert_eq!(limiter.key(&2).available(), 500);
        assert!(limiter.check_key_n(&2, 500).is_ok());
        clock.advance(Duration::from_secs(1));
        assert_eq!(limiter.key(&1).available(), 500);
    }

    #[test]
    fn a_downgrade_waits_at_most_the_old_depth_and_keeps_bookings() {
        let (limiter, _clock) = limiter();
        limiter.set_default_quota(pro());
        assert!(limiter.check_key_n(&1, 500).is_ok());
        let queued = limiter
            .key(&1)
            .reserve_n(10, Duration::from_secs(1))
            .unwrap();
        assert_eq!(queued.ready_at().as_u64(), 200_000_000);
        limiter.set_default_quota(free());
        let refused = limiter.check_key(&1).unwrap_err();
        // 10 s + 0.2 s booked: the old depth plus the booking, minus the new depth, plus one
        // new token.
        assert_eq!(refused.retry_after(), Some(Duration::from_millis(9_300)));
        // The per-key conversion gives the default rule's bound instead.
        limiter.key(&1).rebase_from(&pro(), QuotaChange::KeepSpent);
        let refused = limiter.check_key(&1).unwrap_err();
        assert_eq!(refused.retry_after(), Some(Duration::from_millis(1_100)));
        drop(queued);
    }

    #[test]
    fn changes_racing_keyed_checks_read_whole_quotas() {
        let (limiter, _clock) = limiter();
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..500 {
                    limiter.set_default_quota(if i % 2 == 0 { pro() } else { free() });
                }
            });
            for i in 0..2_000u32 {
                let q = limiter.quota();
                assert!(q == pro() || q == free(), "{q:?}");
                let _ = limiter.check_key(&((i % 7) as u8));
            }
        });
    }
}

#[test]
fn a_keyed_limiter_and_a_limiter_changed_alike_agree() {
    let keyed = KeyedLimiter::<u8, _>::with_clock(free(), ManualClock::new());
    let single = limiter(free());
    keyed.set_default_quota(pro());
    single.set_quota(pro(), QuotaChange::KeepTime);
    for cost in [3, 0, 400, 97, 1] {
        assert_eq!(
            keyed.check_key_n(&1, cost),
            single.check_n(cost),
            "cost {cost}"
        );
    }
}
