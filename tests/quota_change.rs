//! `QuotaChange`: what a bucket holds after its quota changes, strategy by strategy, on a key
//! that changes tier (`KeyedBucket::rebase_from`) and on a limiter (`Limiter::set_quota`).

use cellrate::{KeyedLimiter, Limiter, ManualClock, Quota, QuotaChange};
use std::time::Duration;

fn free() -> Quota {
    Quota::per_second(10).with_burst(10) // T = 100 ms, D = 1 s
}

fn pro() -> Quota {
    Quota::per_second(50).with_burst(500) // T = 20 ms, D = 10 s
}

fn limiter() -> KeyedLimiter<u8, ManualClock> {
    KeyedLimiter::with_clock(free(), ManualClock::new())
}

/// Tokens available after spending `spent` under `from`, then moving to `to` by `how`: the
/// same on a key (`rebase_from`) and on a limiter (`set_quota`).
fn after(spent: u32, from: Quota, to: Quota, how: QuotaChange) -> u32 {
    let limiter = limiter();
    limiter.key(&1).with_quota(&from).check_n(spent).unwrap();
    let moved = limiter.key(&1).with_quota(&to);
    moved.rebase_from(&from, how);
    let single = Limiter::with_clock(from, ManualClock::new());
    single.check_n(spent).unwrap();
    single.set_quota(to, how);
    assert_eq!(single.quota(), to);
    assert_eq!(single.available(), moved.available(), "{how:?}");
    moved.available()
}

#[test]
fn an_upgrade_by_each_strategy() {
    assert_eq!(after(7, free(), pro(), QuotaChange::KeepSpent), 493);
    assert_eq!(after(7, free(), pro(), QuotaChange::KeepAvailable), 3);
    assert_eq!(after(7, free(), pro(), QuotaChange::Proportional), 150);
    assert_eq!(after(7, free(), pro(), QuotaChange::Full), 500);
    assert_eq!(after(7, free(), pro(), QuotaChange::Empty), 0);
    // The TAT kept: 700 ms from full is 35 tokens of 20 ms.
    assert_eq!(after(7, free(), pro(), QuotaChange::KeepTime), 465);
}

#[test]
fn a_downgrade_by_each_strategy() {
    assert_eq!(after(497, pro(), free(), QuotaChange::KeepSpent), 0);
    assert_eq!(after(497, pro(), free(), QuotaChange::KeepAvailable), 3);
    assert_eq!(after(250, pro(), free(), QuotaChange::Proportional), 5);
    assert_eq!(after(497, pro(), free(), QuotaChange::Full), 10);
    assert_eq!(after(497, pro(), free(), QuotaChange::Empty), 0);
    assert_eq!(after(497, pro(), free(), QuotaChange::KeepTime), 0);
}

#[test]
fn the_default_never_makes_a_downgrade_wait_longer_than_the_new_depth() {
    assert_eq!(QuotaChange::default(), QuotaChange::KeepSpent);
    let limiter = limiter();
    limiter.key(&1).with_quota(&pro()).check_n(500).unwrap();
    let kept_time = limiter.key(&1).check().unwrap_err().retry_after().unwrap();
    assert_eq!(
        kept_time,
        Duration::from_millis(9_100),
        "the 9 s of a kept TAT"
    );
    limiter.key(&1).rebase_from(&pro(), QuotaChange::default());
    let retry = limiter.key(&1).check().unwrap_err().retry_after().unwrap();
    assert_eq!(
        retry,
        Duration::from_millis(100),
        "one token of the new quota"
    );
    assert_eq!(
        limiter.key(&1).check_n(10).unwrap_err().retry_after(),
        Some(free().replenish_all())
    );
}

#[test]
fn a_full_bucket_stays_full_and_an_absent_key_stays_absent() {
    for how in [
        QuotaChange::KeepSpent,
        QuotaChange::KeepAvailable,
        QuotaChange::Proportional,
        QuotaChange::KeepTime,
        QuotaChange::Full,
    ] {
        let limiter = limiter();
        limiter.key(&1).rebase_from(&free(), how); // never seen: nothing to carry
        assert_eq!(limiter.len(), 0);
        assert_eq!(
            limiter.key(&1).with_quota(&pro()).available(),
            500,
            "{how:?}"
        );
        limiter.key(&2).check_n(0).unwrap();
        assert_eq!(after(0, free(), pro(), how), 500, "{how:?}");
    }
}

#[test]
fn tokens_booked_ahead_keep_their_place() {
    let limiter = limiter();
    let on_pro = limiter.key(&1).with_quota(&pro());
    assert!(on_pro.check_n(500).is_ok());
    let queued = on_pro.reserve_n(10, Duration::from_secs(1)).unwrap();
    assert_eq!(
        queued.ready_at().as_u64(),
        200_000_000,
        "10 tokens of 20 ms in debt"
    );
    // A downgrade to 10 tokens: the bucket is empty, and the 10 booked ahead stay booked, as
    // 10 tokens of the new quota: 1 s of debt on top of the 1 s depth.
    limiter.key(&1).rebase_from(&pro(), QuotaChange::KeepSpent);
    let refused = limiter.key(&1).check().unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(1_100)));
    drop(queued);
}
