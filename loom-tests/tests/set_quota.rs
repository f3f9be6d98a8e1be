//! Models of a quota change racing checks, refunds and cancellations: every operation must see
//! the bucket either entirely before the change (old quota, old TAT) or entirely after it (new
//! quota, rebased TAT), no write may be lost, and every quota read must be whole. The twins:
//! a change that rebases the TAT it loaded and stores the move without a compare-and-swap, and
//! a keyed default quota published without ordering its write first.
#![cfg(loom)]

use cellrate::{all_of, Broken, KeyedLimiter, Limiter, ManualClock, Nanos, Quota, QuotaChange};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

const T: u64 = 10; // emission interval of every model, in ns

fn quota(burst: u32) -> Quota {
    Quota::try_new(Duration::from_nanos(T), burst).unwrap()
}

fn change(limiter: &Limiter<ManualClock>, to: Quota, how: QuotaChange, racy: bool) {
    if racy {
        limiter.set_quota_at_racy(to, how, Nanos::ZERO);
    } else {
        limiter.set_quota_at(to, how, Nanos::ZERO);
    }
}

/// A check of 2 tokens races a change from burst 2 to burst 1 (spent tokens kept). Before the
/// change: admitted, TAT 20, rebased to 10 (one spent token of the new burst). After it: a
/// cost above the new burst, denied, TAT 0. Nothing else is possible.
fn check_races_change(racy: bool) {
    let limiter = Arc::new(Limiter::with_clock(quota(2), ManualClock::new()));
    let changer = {
        let limiter = limiter.clone();
        thread::spawn(move || change(&limiter, quota(1), QuotaChange::KeepSpent, racy))
    };
    let admitted = limiter.check_n_at(2, Nanos::ZERO).is_ok();
    changer.join().unwrap();
    let tat = limiter.theoretical_arrival().as_u64();
    assert_eq!(limiter.quota(), &quota(1));
    if admitted {
        assert_eq!(
            tat, 10,
            "admitted before the change: its spend must be rebased"
        );
    } else {
        assert_eq!(tat, 0, "denied after the change: nothing spent");
    }
}

/// A refund of one token races a change from burst 2 to burst 4 (available tokens kept), on a
/// bucket with both tokens spent. Refund first: 1 of 2 left, then 1 of 4 (TAT 30). Change
/// first: 0 of 4 (TAT 40), then the refund gives 1 back (TAT 30). Either way TAT 30.
fn refund_races_change(racy: bool) {
    let limiter = Arc::new(Limiter::with_clock(quota(2), ManualClock::new()));
    limiter.check_n_at(2, Nanos::ZERO).unwrap();
    let changer = {
        let limiter = limiter.clone();
        thread::spawn(move || change(&limiter, quota(4), QuotaChange::KeepAvailable, racy))
    };
    limiter.refund_n_at(1, Nanos::ZERO);
    changer.join().unwrap();
    assert_eq!(
        limiter.theoretical_arrival(),
        Nanos::new(30),
        "a lost write"
    );
}

/// A check on a limiter changed once races a second change (the chain of moved buckets):
/// the check lands on the first new bucket (TAT 10 under burst 4, rebased by KeepTime to 10)
/// or on the second (TAT 10 under burst 3). Either way the TAT is 10 and the quota burst 3.
fn check_races_second_change(racy: bool) {
    let limiter = Arc::new(Limiter::with_clock(quota(2), ManualClock::new()));
    limiter.set_quota_at(quota(4), QuotaChange::Full, Nanos::ZERO);
    let changer = {
        let limiter = limiter.clone();
        thread::spawn(move || change(&limiter, quota(3), QuotaChange::KeepTime, racy))
    };
    assert!(limiter.check_n_at(1, Nanos::ZERO).is_ok());
    changer.join().unwrap();
    assert_eq!(limiter.quota(), &quota(3));
    assert_eq!(
        limiter.theoretical_arrival(),
        Nanos::new(10),
        "a lost write"
    );
}

/// A reservation booked before a change is cancelled while the change runs: cancelled first,
/// the bucket is back to full and stays full (Full-rate KeepSpent of nothing: TAT 0); changed
/// first, the cancellation gives nothing back (TAT 10: one spent token kept). Never below.
fn cancel_races_change() {
    // std's Arc: the one `into_owned` takes; its count is no part of the model.
    let limiter = std::sync::Arc::new(Limiter::with_clock(quota(2), ManualClock::new()));
    let booked = limiter
        .reserve_n_at(1, Duration::ZERO, Nanos::ZERO)
        .unwrap()
        .into_owned(limiter.clone())
        .unwrap();
    let changer = {
        let limiter = limiter.clone();
        thread::spawn(move || change(&limiter, quota(3), QuotaChange::KeepSpent, false))
    };
    booked.cancel_at(Nanos::ZERO);
    changer.join().unwrap();
    let tat = limiter.theoretical_arrival().as_u64();
    assert!(tat == 0 || tat == 10, "TAT {tat}");
}

/// An `all_of` over a limiter and a drained one races a change of the first (burst 2 to 3,
/// spent tokens kept): it spends 1 there, is refused by the second, and rolls back. Rolled back
/// before the change, or spent after it: TAT 0, and a check of 3 passes. The change between
/// the spend and the rollback: the spent token is carried over and the rollback, meant for the
/// old bucket, gives nothing back (TAT 10; a check of 3 must wait one token). Never a check
/// decided under the old quota again.
fn all_of_races_change(blind: bool) {
    let limiter = Arc::new(Limiter::with_clock(quota(2), ManualClock::new()));
    let drained = Limiter::with_clock(quota(1), ManualClock::new());
    drained.check_n_at(1, Nanos::ZERO).unwrap();
    let changer = {
        let limiter = limiter.clone();
        thread::spawn(move || change(&limiter, quota(3), QuotaChange::KeepSpent, false))
    };
    let both = [&*limiter as &dyn cellrate::Limit, &drained];
    let refused = if blind {
        all_of(&both).check_n_at_with_blind_rollback(1, Nanos::ZERO)
    } else {
        all_of(&both).check_n_at(1, Nanos::ZERO)
    };
    assert!(refused.is_err());
    changer.join().unwrap();
    let tat = limiter.theoretical_arrival().as_u64();
    assert!(tat == 0 || tat == 10, "TAT {tat}");
    let check = limiter.check_n_at(3, Nanos::ZERO);
    let expected = if tat == 0 {
        None
    } else {
        Some(Duration::from_nanos(10))
    };
    assert_eq!(
        check.err().map(|d| d.retry_after()),
        expected.map(Some),
        "decided under the quota of its TAT"
    );
}

/// A keyed check reads the default quota while a second change sets it: the quota it decides
/// with is the old one or the new one, whole. (The twin rewrites the quota of the first change
/// in place.)
fn keyed_default_read(racy: bool) {
    let limiter = Arc::new(KeyedLimiter::<u64, _>::loom_tiny(
        quota(1),
        ManualClock::new(),
        2,
        2,
        Broken::Nothing,
    ));
    limiter.set_default_quota(quota(2));
    let changer = {
        let limiter = limiter.clone();
        thread::spawn(move || {
            if racy {
                limiter.set_default_quota_racy(quota(5));
            } else {
                limiter.set_default_quota(quota(5));
            }
        })
    };
    let read = *limiter.quota();
    assert!(
        read == quota(2) || read == quota(5),
        "a torn quota {read:?}"
    );
    changer.join().unwrap();
    assert_eq!(limiter.quota(), &quota(5));
}

#[test]
fn a_check_racing_a_quota_change_sees_one_side_of_it() {
    loom::model(|| check_races_change(false));
}

#[test]
#[should_panic(expected = "its spend must be rebased")]
fn a_check_racing_a_racy_quota_change_is_lost() {
    loom::model(|| check_races_change(true));
}

#[test]
fn a_refund_racing_a_quota_change_is_kept() {
    loom::model(|| refund_races_change(false));
}

#[test]
#[should_panic(expected = "a lost write")]
fn a_refund_racing_a_racy_quota_change_is_lost() {
    loom::model(|| refund_races_change(true));
}

#[test]
fn a_check_racing_a_second_change_follows_the_chain() {
    loom::model(|| check_races_second_change(false));
}

#[test]
#[should_panic(expected = "a lost write")]
fn a_check_racing_a_racy_second_change_is_lost() {
    loom::model(|| check_races_second_change(true));
}

#[test]
fn a_cancellation_racing_a_change_never_gives_back_new_tokens() {
    loom::model(cancel_races_change);
}

#[test]
fn an_all_of_racing_a_change_rolls_back_in_the_bucket_it_spent_in() {
    loom::model(|| all_of_races_change(false));
}

#[test]
#[should_panic(expected = "decided under the quota of its TAT")]
fn an_all_of_rolling_back_blindly_across_a_change_revives_the_old_quota() {
    loom::model(|| all_of_races_change(true));
}

#[test]
fn a_keyed_check_reads_a_whole_default_quota() {
    loom::model(|| keyed_default_read(false));
}

#[test]
#[should_panic(expected = "Causality violation")]
fn a_keyed_check_can_read_a_default_quota_rewritten_in_place() {
    loom::model(|| keyed_default_read(true));
}
