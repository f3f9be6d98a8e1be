//! `Limiter` at the edges of `u64`: an overflow is a denial, never a wrap into an admission.
//! (The other rules of the decision are tested in `limiter.rs`.)

mod common;

use cellrate::{Limiter, ManualClock, Nanos, Quota};
use common::{at, quota};

fn limiter(quota: Quota) -> Limiter<ManualClock> {
    Limiter::with_clock(quota, ManualClock::new())
}

/// A fresh limiter on `quota` with `spent` tokens spent at `when`.
fn spent_at(quota: Quota, spent: u32, when: u64) -> Limiter<ManualClock> {
    let limiter = limiter(quota);
    limiter
        .check_n_at(spent, at(when))
        .expect("the setup spend");
    limiter
}

#[test]
fn a_cost_whose_product_overflows_is_denied() {
    // 5_124_097 * 3.6e12 ns wraps a u64 to about 1.4 hourly tokens: it must not pass.
    let l = Limiter::with_clock(Quota::per_hour(1).with_burst(10), ManualClock::new());
    let denied = l.check_n(5_124_097).unwrap_err();
    assert_eq!(denied.retry_after(), None);
    assert_eq!(denied.remaining(), 10);
    assert_eq!(l.available(), 10);
    assert_eq!(l.check_n(10).unwrap().remaining(), 0);
}

#[test]
fn a_check_near_the_end_of_the_clock_is_denied_and_never_wraps() {
    let l = limiter(quota(10, 5));
    assert_eq!(l.check_n_at(1, Nanos::MAX).unwrap_err().retry_after(), None);
    assert_eq!(l.available_at(Nanos::MAX), 5);
    // The last spend whose TAT is representable, then one more.
    let end = u64::MAX - 10;
    assert_eq!(l.check_n_at(1, at(end)).unwrap().remaining(), 4);
    let denied = l.check_n_at(1, at(end)).unwrap_err();
    assert_eq!((denied.retry_after(), denied.remaining()), (None, 4));
    assert_eq!(l.available_at(at(end)), 4);
    assert!(l.check_n_at(1, Nanos::MAX).is_err());
    // A wrapped TAT would make the bucket look full at small times.
    assert!(l.check_n_at(1, at(0)).is_err());
    assert_eq!(l.available_at(at(0)), 0);

    let hourly = Quota::per_hour(1).with_burst(10);
    let last_start = u64::MAX - hourly.depth_ns();
    assert!(limiter(hourly).check_n_at(10, at(last_start)).is_ok());
    let denied = limiter(hourly)
        .check_n_at(10, at(last_start + 1))
        .unwrap_err();
    assert_eq!(denied.retry_after(), None);
}

/// `retry_after` promises a pass at exactly `now + retry_after`, or is `None` where no such
/// instant exists: near the end of the clock, and for a depth beyond half the clock.
#[test]
fn a_retry_after_near_the_end_of_the_clock_is_kept_or_none() {
    for (q, start) in [(quota(10, 5), u64::MAX - 50), (quota(1 << 62, 3), 0)] {
        let l = spent_at(q, q.burst(), start);
        let denied = l.check_n_at(1, at(start)).unwrap_err();
        if let Some(wait) = denied.retry_after() {
            let then = start.checked_add(wait.as_nanos() as u64);
            let passes = then.is_some_and(|then| l.check_n_at(1, at(then)).is_ok());
            assert!(
                passes,
                "{q:?} at {start}: told to retry at {then:?}, refused there"
            );
        }
    }
}

#[test]
fn a_cost_near_u32_max_on_a_depth_near_u64_max_is_exact() {
    // T * b just below u64::MAX: the largest spend fits, the same again is denied.
    let q = quota(u64::MAX / 4_000_000_000, 4_000_000_000);
    let l = limiter(q);
    assert_eq!(l.check_n_at(4_000_000_000, at(10)).unwrap().remaining(), 0);
    assert!(l.check_n_at(1, at(10)).is_err());
    assert_eq!(l.available_at(at(10 + q.depth_ns())), 4_000_000_000);
}
