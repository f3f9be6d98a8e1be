//! Models of a quota change racing checks, give-backs, settles, `all_of` and another change:
//! every operation must see the bucket either entirely before the change (old quota, old TAT)
//! or entirely after it (new quota, rebased TAT), no write may be lost, and a give-back never
//! reaches the cell the change made. The twins: a change whose move is a load and a store
//! instead of a compare-and-swap, a change made without the change lock, and give-backs that
//! write by a load and a store or act on the live cell.

use super::{cancel_broken, quota_of, set_quota_without_the_lock, tat, BrokenGiveBack, T};
use crate::loom_tests::{bounded, spawn};
use crate::sync::test_faults::racy;
use crate::{all_of, Limit, Limiter, ManualClock, Nanos, Quota, QuotaChange};
use core::time::Duration;
use loom::sync::Arc;

fn quota(burst: u32) -> Quota {
    quota_of(T, burst)
}

/// Changes the quota at 0, the move by a load and a store if `racy_move`.
fn change(limiter: &Limiter<ManualClock>, to: Quota, how: QuotaChange, racy_move: bool) {
    let set = || limiter.at(Nanos::ZERO).set_quota(to, how);
    if racy_move {
        racy(set);
    } else {
        set();
    }
}

/// A check of 2 tokens races a change from burst 2 to burst 1 (spent tokens kept). Before the
/// change: admitted, TAT 20, rebased to 10 (one spent token of the new burst). After it: a
/// cost above the new burst, denied, TAT 0. Nothing else is possible.
fn check_races_change(racy_move: bool) {
    let limiter = Arc::new(Limiter::with_clock(quota(2), ManualClock::new()));
    let changer = {
        let limiter = limiter.clone();
        spawn(move || change(&limiter, quota(1), QuotaChange::KeepSpent, racy_move))
    };
    let admitted = limiter.at(Nanos::ZERO).check_n(2).is_ok();
    changer.join().unwrap();
    if admitted {
        assert_eq!(
            tat(&limiter),
            10,
            "admitted before the change: its spend must be rebased"
        );
    } else {
        assert_eq!(tat(&limiter), 0, "denied after the change: nothing spent");
    }
    assert_eq!(limiter.quota(), quota(1));
}

/// A settle above its booking (1 token booked, 2 used) races a change from burst 2 to burst 4
/// (available tokens kept): the extra token is spent in the bucket as it is then. Settled
/// first: 0 of 2 left, then 0 of 4 (TAT 40). Changed first: 1 of 2 left becomes 1 of 4 (TAT
/// 30), then the extra token is spent under the new quota (TAT 40). Either way TAT 40.
fn settle_races_change(racy_move: bool) {
    let limiter = Arc::new(Limiter::with_clock(quota(2), ManualClock::new()));
    let booked = limiter
        .at(Nanos::ZERO)
        .reserve(1, Duration::ZERO)
        .unwrap()
        .detach();
    let changer = {
        let limiter = limiter.clone();
        spawn(move || change(&limiter, quota(4), QuotaChange::KeepAvailable, racy_move))
    };
    let booked = limiter.attach(booked).unwrap();
    booked.settle_at(2, Nanos::ZERO).unwrap();
    changer.join().unwrap();
    assert_eq!(tat(&limiter), 40, "a lost write");
}

/// A check on a limiter changed once races a second change (the chain of moved buckets):
/// the check lands on the first new bucket (TAT 10 under burst 4, rebased by KeepTime to 10)
/// or on the second (TAT 10 under burst 3). Either way the TAT is 10 and the quota burst 3.
fn check_races_second_change(racy_move: bool) {
    let limiter = Arc::new(Limiter::with_clock(quota(2), ManualClock::new()));
    change(&limiter, quota(4), QuotaChange::Full, false);
    let changer = {
        let limiter = limiter.clone();
        spawn(move || change(&limiter, quota(3), QuotaChange::KeepTime, racy_move))
    };
    assert!(limiter.at(Nanos::ZERO).check_n(1).is_ok());
    changer.join().unwrap();
    assert_eq!(limiter.quota(), quota(3));
    assert_eq!(tat(&limiter), 10, "a lost write");
}

/// A booking of 2 tokens, made to be taken back, is cancelled while a change from burst 4 to
/// burst 2 (spent tokens kept, capped at the new burst) runs, on a bucket with 2 more tokens
/// spent. Cancelled first: 2 of 4 spent become 2 of 2 (TAT 20). Changed first: the 4 spent
/// are capped at 2 (TAT 20), and the cancel, whose tenure ended, gives nothing: the change has
/// already forgiven the booking's tokens. Either way the bucket is empty at 0. The twin gives
/// back on the live cell, by the rule, and hands the forgiven tokens out a second time.
fn cancel_races_change(on_live_cell: bool) {
    let limiter = Arc::new(Limiter::with_clock(quota(4), ManualClock::new()));
    limiter.at(Nanos::ZERO).check_n(2).unwrap();
    let booked = limiter
        .at(Nanos::ZERO)
        .reserve(2, Duration::ZERO)
        .unwrap()
        .detach();
    let changer = {
        let limiter = limiter.clone();
        spawn(move || change(&limiter, quota(2), QuotaChange::KeepSpent, false))
    };
    let booked = limiter.attach(booked).unwrap();
    if on_live_cell {
        let now = Some(Nanos::ZERO);
        cancel_broken(&limiter, booked, BrokenGiveBack::OnLiveCell, now);
    } else {
        booked.cancel_at(Nanos::ZERO);
    }
    changer.join().unwrap();
    assert_eq!(
        limiter.at(Nanos::ZERO).available(),
        0,
        "a give-back returned tokens the change had carried over"
    );
    assert_eq!(tat(&limiter), 20);
}

/// An `all_of` over a limiter and a drained one races a change of the first (burst 2 to 3,
/// spent tokens kept): it spends 1 there, is refused by the second, and rolls back. Rolled back
/// before the change, or spent after it: TAT 0, and a check of 3 passes. The change between
/// the spend and the rollback: the spent token is carried over and the rollback, meant for the
/// old bucket, gives nothing back (TAT 10; a check of 3 must wait one token). Never a check
/// decided under the old quota again. The twin takes the same steps (a booking that may be
/// taken back, the refusal, the give-back) with the give-back's compare-and-swap made of a
/// load and a store: it can write over the move.
fn all_of_races_change(racy_rollback: bool) {
    let limiter = Arc::new(Limiter::with_clock(quota(2), ManualClock::new()));
    let drained = Limiter::with_clock(quota(1), ManualClock::new());
    drained.at(Nanos::ZERO).check_n(1).unwrap();
    let changer = {
        let limiter = limiter.clone();
        spawn(move || change(&limiter, quota(3), QuotaChange::KeepSpent, false))
    };
    if racy_rollback {
        let spent = limiter.at(Nanos::ZERO).reserve(1, Duration::ZERO).unwrap();
        assert!(drained.at(Nanos::ZERO).check_n(1).is_err());
        racy(|| spent.cancel_at(Nanos::ZERO));
    } else {
        let both: [(&dyn Limit, u32); 2] = [(&*limiter, 1), (&drained, 1)];
        assert!(all_of(&both).at(Nanos::ZERO).check().is_err());
    }
    changer.join().unwrap();
    let tat = tat(&limiter);
    assert!(tat == 0 || tat == 10, "TAT {tat}");
    let check = limiter.at(Nanos::ZERO).check_n(3);
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

/// Two changes race each other and a check, on a bucket of burst 2 with one token spent: one
/// to burst 3 keeping the tokens available, one to burst 4 keeping the tokens spent. In every
/// order of the three the check is admitted, and the change made last decides the end: after
/// the burst-3 change, 1 token spent of 3 (TAT 10); after the burst-4 change, 3 spent of 4
/// (TAT 30). So `quota()` must be the last change's, the TAT the one its rule gave from the
/// spends before it, and a check after both must decide under that quota.
///
/// Three threads: preemption bound 4 (`TWO_CHANGES`); exhaustive search takes minutes.
fn two_changes_race(locked: bool) {
    let limiter = Arc::new(Limiter::with_clock(quota(2), ManualClock::new()));
    limiter.at(Nanos::ZERO).check_n(1).unwrap();
    let changers: Vec<_> = [
        (quota(3), QuotaChange::KeepAvailable),
        (quota(4), QuotaChange::KeepSpent),
    ]
    .into_iter()
    .map(|(to, how)| {
        let limiter = limiter.clone();
        spawn(move || {
            if locked {
                limiter.at(Nanos::ZERO).set_quota(to, how);
            } else {
                set_quota_without_the_lock(&limiter, to, how, Nanos::ZERO);
            }
        })
    })
    .collect();
    let admitted = limiter.at(Nanos::ZERO).check_n(1).is_ok();
    for changer in changers {
        changer.join().unwrap();
    }
    let last = limiter.quota();
    let end = (admitted, last.burst(), tat(&limiter));
    assert!(
        end == (true, 3, 10) || end == (true, 4, 30),
        "not the end of the three in any order: (admitted, burst, TAT) {end:?}"
    );
    let left = last.burst() - u32::try_from(end.2 / T).unwrap();
    let now = limiter.at(Nanos::ZERO);
    assert!(now.check_n(left).is_ok());
    assert!(
        now.check_n(1).is_err(),
        "a check decided under another quota"
    );
}

/// The preemption bound of [`two_changes_race`].
const TWO_CHANGES: usize = 4;

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
fn a_settle_above_racing_a_quota_change_is_kept() {
    loom::model(|| settle_races_change(false));
}

#[test]
#[should_panic(expected = "a lost write")]
fn a_settle_above_racing_a_racy_quota_change_is_lost() {
    loom::model(|| settle_races_change(true));
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
fn a_cancellation_racing_a_change_never_gives_back_what_the_change_carried_over() {
    loom::model(|| cancel_races_change(false));
}

#[test]
#[should_panic(expected = "a give-back returned tokens the change had carried over")]
fn a_cancellation_on_the_live_cell_gives_back_what_the_change_carried_over() {
    loom::model(|| cancel_races_change(true));
}

#[test]
fn an_all_of_racing_a_change_rolls_back_in_the_bucket_it_spent_in() {
    loom::model(|| all_of_races_change(false));
}

#[test]
#[should_panic(expected = "decided under the quota of its TAT")]
fn an_all_of_rolling_back_by_load_and_store_across_a_change_revives_the_old_quota() {
    loom::model(|| all_of_races_change(true));
}

#[test]
fn two_changes_racing_a_check_end_with_the_last_one() {
    bounded(TWO_CHANGES).check(|| two_changes_race(true));
}

#[test]
#[should_panic(expected = "not the end of the three in any order")]
fn two_changes_without_the_lock_end_between_them() {
    bounded(TWO_CHANGES).check(|| two_changes_race(false));
}
