//! `Limiter` at the edges of `u64`: an overflow is a denial, never a wrap into an admission.
//! (The other rules of the decision are tested in `limiter.rs`.)

use crate::common::{keyed, manual, quota};
use cellrate::{Nanos, Quota};
use std::time::Duration;

/// The longest depth a quota may have, in nanoseconds.
const MAX_DEPTH: u64 = Quota::MAX_DEPTH.as_nanos() as u64;

#[test]
fn a_cost_whose_product_overflows_is_denied() {
    // 5_124_097 * 3.6e12 ns wraps a u64 to about 1.4 hourly tokens: it must not pass.
    let (l, _) = manual(Quota::per_hour(1).with_burst(10));
    let denied = l.check_n(5_124_097).unwrap_err();
    assert_eq!(denied.retry_after(), None);
    assert_eq!(denied.remaining(), 10);
    assert_eq!(l.available(), 10);
    assert_eq!(l.check_n(10).unwrap().remaining(), 0);
}

#[test]
fn a_check_near_the_end_of_the_clock_is_denied_and_never_wraps() {
    let l = manual(quota(10, 5)).0;
    // The bucket holds 5 tokens, but none can be spent: the answer says so, never "you have
    // the tokens" with "this can never pass".
    let denied = l.at(Nanos::MAX).check_n(1).unwrap_err();
    assert_eq!((denied.retry_after(), denied.remaining()), (None, 0));
    assert_eq!(l.at(Nanos::MAX).available(), 5);
    // The last spend whose TAT is representable (the clock's last nanosecond is the marker of
    // a bucket moved by a quota change, never a TAT), then one more.
    let end = u64::MAX - 11;
    assert_eq!(l.at(Nanos::new(end)).check_n(1).unwrap().remaining(), 4);
    let denied = l.at(Nanos::new(end)).check_n(1).unwrap_err();
    assert_eq!((denied.retry_after(), denied.remaining()), (None, 0));
    assert_eq!(l.at(Nanos::new(end)).available(), 4);
    assert!(l.at(Nanos::MAX).check_n(1).is_err());
    // A wrapped TAT would make the bucket look full at small times.
    assert!(l.at(Nanos::ZERO).check_n(1).is_err());
    assert_eq!(l.at(Nanos::ZERO).available(), 0);

    let hourly = Quota::per_hour(1).with_burst(10);
    let last_start = u64::MAX - 1 - hourly.replenish_all().as_nanos() as u64;
    assert!(manual(hourly)
        .0
        .at(Nanos::new(last_start))
        .check_n(10)
        .is_ok());
    let denied = manual(hourly)
        .0
        .at(Nanos::new(last_start + 1))
        .check_n(10)
        .unwrap_err();
    assert_eq!(denied.retry_after(), None);
}

/// `retry_after` promises a pass at exactly `now + retry_after`, or is `None` where no such
/// instant exists: near the end of the clock. At the deepest quota it is always kept.
#[test]
fn a_retry_after_near_the_end_of_the_clock_is_kept_or_none() {
    for (q, start) in [(quota(10, 5), u64::MAX - 51), (quota(1 << 60, 4), 0)] {
        let (l, _) = manual(q);
        l.at(Nanos::new(start)).check_n(q.burst()).unwrap();
        let denied = l.at(Nanos::new(start)).check_n(1).unwrap_err();
        if let Some(wait) = denied.retry_after() {
            let then = start.checked_add(wait.as_nanos() as u64);
            let passes = then.is_some_and(|then| l.at(Nanos::new(then)).check_n(1).is_ok());
            assert!(
                passes,
                "{q:?} at {start}: told to retry at {then:?}, refused there"
            );
        }
    }
}

#[test]
fn a_cost_near_u32_max_on_the_deepest_quota_is_exact() {
    // T * b just below the longest depth: the largest spend fits, the same again is denied.
    let q = quota(MAX_DEPTH / 4_000_000_000, 4_000_000_000);
    let l = manual(q).0;
    assert_eq!(
        l.at(Nanos::new(10))
            .check_n(4_000_000_000)
            .unwrap()
            .remaining(),
        0
    );
    assert!(l.at(Nanos::new(10)).check_n(1).is_err());
    assert_eq!(
        l.at(Nanos::new(10).saturating_add(q.replenish_all()))
            .available(),
        4_000_000_000
    );
}

/// The slowest quotas that are accepted decide like any other: a full bucket admits any cost
/// up to its burst, at any time of the clock's first 2^63 ns. Deeper quotas are refused when
/// built.
#[test]
fn a_full_bucket_of_the_deepest_quota_admits_its_burst() {
    let slowest = Quota::with_period(Quota::MAX_DEPTH);
    assert!(cellrate::Limiter::new(slowest).check().is_ok());
    let widest = quota(MAX_DEPTH / u64::from(u32::MAX), u32::MAX);
    for now in [0, 1 << 40, (1 << 63) - MAX_DEPTH - 1] {
        let allowed = manual(widest)
            .0
            .at(Nanos::new(now))
            .check_n(u32::MAX)
            .unwrap();
        assert_eq!(allowed.remaining(), 0, "at {now}");
        let (table, _) = keyed::<u64>(widest);
        assert!(
            table.at(Nanos::new(now)).key(&1).check_n(u32::MAX).is_ok(),
            "at {now}"
        );
    }
}

/// A keyed check at the end of the clock reports no tokens either.
#[test]
fn a_keyed_check_at_the_end_of_the_clock_reports_no_tokens() {
    let (table, _) = keyed::<u64>(quota(10, 5));
    let denied = table.at(Nanos::MAX).key(&1).check_n(1).unwrap_err();
    assert_eq!((denied.retry_after(), denied.remaining()), (None, 0));
}

/// A reservation settled far above its cost puts the bucket in debt, up to 2^62 ns ahead of
/// now, and no further: every TAT stays within reach of the clock.
#[test]
fn a_forced_debt_stops_at_the_longest_depth() {
    let (l, _) = manual(Quota::per_hour(1).with_burst(10));
    let booked = l.at(Nanos::ZERO).reserve(1, Duration::ZERO).unwrap();
    booked.settle(u32::MAX).unwrap();
    let denied = l.at(Nanos::ZERO).check_n(1).unwrap_err();
    assert_eq!(denied.reset_after(), Quota::MAX_DEPTH);
    // A reservation may not wait past it either.
    assert!(l.at(Nanos::ZERO).reserve(1, Duration::MAX).is_err());
}
