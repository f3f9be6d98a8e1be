//! The one rule of every give-back (docs/design.md, section 5), on the schedules where a
//! value comparison of the TAT, or a give-back that knows nothing of the booking's time, gives
//! back more than the booking still holds. All on `Quota::per_second(10)`, burst 10 (T = 100
//! ms), with the time passed in, unless said otherwise.

use crate::common::{manual, ms};
use cellrate::{all_of, KeyedLimiter, ManualClock, OverflowPolicy, Quota, QuotaChange};
use std::time::Duration;

const WAIT: Duration = Duration::from_millis(400);

/// X is booked at 0 and not carried out; R is booked behind it; at 400 ms X is given back, Y
/// spends 5 and R is given back. Only Y was carried out: at most 5 of the 10 may be left.
/// (A give-back that compared the TAT with the value R's booking left would have found it
/// there again, X's give-back and Y's spend having brought it back, and returned R's 5 on top
/// of Y's: 14 in one instant.)
#[test]
fn a_give_back_and_a_spend_between_a_booking_and_its_cancel_do_not_fool_it() {
    for y in [5, 4] {
        let (limiter, _) = manual(Quota::per_second(10));
        let x = limiter.at(ms(0)).reserve(5, Duration::ZERO).unwrap();
        let r = limiter.at(ms(0)).reserve(5, WAIT).unwrap();
        x.cancel_at(ms(400)); // X held 100 ms of its 500 by then
        assert!(limiter.at(ms(400)).check_n(y).is_ok());
        r.cancel_at(ms(400));
        assert!(
            limiter.at(ms(400)).available() <= 10 - y,
            "Y spent {y} at 400 ms and {} are left",
            limiter.at(ms(400)).available()
        );
        // Nothing is lost either: the exact bucket that saw only Y has exactly this many.
        assert_eq!(limiter.at(ms(400)).available(), 10 - y);
    }
}

/// The same interleaving around an `all_of` rollback, made by hand: a spend on L that the next
/// limit refuses, with a give-back and a spend on L before the rollback.
#[test]
fn an_all_of_rollback_after_a_give_back_and_a_spend_returns_only_its_own() {
    let (l, _) = manual(Quota::per_second(10));
    let x = l.at(ms(0)).reserve(5, Duration::ZERO).unwrap();
    // The all_of's spend on L (a zero-wait booking is the same step), then its refusal.
    let spent = l.at(ms(0)).reserve(5, Duration::ZERO).unwrap();
    x.cancel_at(ms(400));
    assert!(l.at(ms(400)).check_n(5).is_ok()); // Y
    spent.cancel_at(ms(400)); // the rollback
    assert_eq!(l.at(ms(400)).available(), 5, "only Y's 5 are spent");
    // And all_of itself, where nothing comes between: exactly as if it never ran.
    let (g, _) = manual(Quota::per_second(1).with_burst(1));
    g.at(ms(400)).check_n(1).unwrap();
    assert!(all_of(&[(&l, 3), (&g, 3)]).at(ms(400)).check().is_err());
    assert_eq!(l.at(ms(400)).available(), 5);
}

/// A booking settled above its cost after a quota change: the extra is charged under the live
/// quota, not dropped and not capped at the booking's burst.
#[test]
fn a_settle_above_the_booking_after_a_quota_change_charges_the_live_quota() {
    // Booked under 100/s, settled at 50 under 10/s: 49 more tokens of 100 ms, in debt.
    let (limiter, _) = manual(Quota::per_second(100));
    let booked = limiter.at(ms(0)).reserve(1, Duration::ZERO).unwrap();
    limiter
        .at(ms(0))
        .set_quota(Quota::per_second(10), QuotaChange::KeepSpent);
    booked.settle_at(50, ms(0)).unwrap();
    assert_eq!(
        limiter.at(ms(0)).available(),
        0,
        "the extra cost was not charged"
    );
    let refused = limiter.at(ms(0)).check_n(1).unwrap_err();
    // 1 token kept by the change, 49 forced: 5 s of debt beyond the burst.
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(4_100)));
    // Upgraded from 10/s to 100/s, then settled from 1 to 50: 50 of 100 spent.
    let (limiter, _) = manual(Quota::per_second(10));
    let booked = limiter.at(ms(0)).reserve(1, Duration::ZERO).unwrap();
    limiter
        .at(ms(0))
        .set_quota(Quota::per_second(100), QuotaChange::KeepSpent);
    booked.settle_at(50, ms(0)).unwrap();
    assert_eq!(limiter.at(ms(0)).available(), 50);
}

/// A keyed booking whose key was evicted, settled far above its cost: the re-created bucket is
/// charged the whole extra, as a held key would be.
#[test]
fn a_settle_above_an_evicted_keys_booking_charges_the_whole_extra() {
    let clock = ManualClock::new();
    let limiter = KeyedLimiter::<u32, _>::builder(Quota::per_second(10))
        .max_keys(1)
        .clock(clock.clone())
        .overflow(OverflowPolicy::EvictNearestNew)
        .build();
    let booked = limiter
        .at(ms(0))
        .key(&1)
        .reserve(1, Duration::ZERO)
        .unwrap();
    for other in 2..5 {
        limiter.at(ms(0)).key(&other).check_n(5).unwrap(); // evicts key 1
    }
    // Room can be made for it (keys start full, EvictNearestNew): the extra is charged.
    booked.settle_at(1_000, ms(0)).unwrap();
    let refused = limiter.at(ms(0)).key(&1).check_n(1).unwrap_err();
    let retry = refused.retry_after().unwrap();
    assert!(
        retry >= Duration::from_secs(99),
        "settled 999 extra tokens of 100 ms: retry in {retry:?}"
    );
}

/// A settle below the booking before its tokens are there gives nothing back: they may still
/// be used at `ready_at`, and a later booking was timed around them.
#[test]
fn a_settle_before_ready_at_gives_nothing_back() {
    let (limiter, _) = manual(Quota::per_second(10).with_burst(1));
    limiter.at(ms(0)).check_n(1).unwrap();
    let waiting = limiter.at(ms(0)).reserve(1, WAIT).unwrap(); // ready at 100 ms
    waiting.settle_at(0, ms(50)).unwrap();
    assert!(
        limiter.at(ms(100)).check_n(1).is_err(),
        "the waiting token came back"
    );
    assert!(limiter.at(ms(200)).check_n(1).is_ok());
}

/// A give-back always reads a time no earlier than the spends it sees: the forms without
/// `_at` read the clock after loading the TAT.
#[test]
fn a_cancel_reads_the_bucket_time_when_it_gives_back() {
    let (limiter, clock) = manual(Quota::per_second(10));
    let x = limiter.reserve(5, Duration::ZERO).unwrap(); // 0 to 500 ms
    limiter.check_n(1).unwrap(); // 500 to 600 ms: X is no longer on top
    clock.set(ms(300));
    // At 300 ms X held only its last 200 ms: the check above it moves down to end at 400 ms.
    // (Read at 0, the give-back would have returned all 500.)
    x.cancel();
    assert_eq!(limiter.available(), 9);
    assert_eq!(
        limiter.check_n(0).unwrap().reset_after(),
        Duration::from_millis(100)
    );
}
