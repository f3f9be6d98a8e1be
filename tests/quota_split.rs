//! `Quota::split`: one server's share of a global quota.

use cellrate::{Quota, QuotaError};
use std::time::Duration;

/// The longest period: 2^62 nanoseconds.
const LONGEST_PERIOD: Duration = Quota::MAX_DEPTH;

#[test]
fn split_divides_the_rate_and_the_burst_among_the_shares() {
    let share = Quota::per_second(100).with_burst(20).split(4).unwrap();
    assert_eq!(share.emission_interval(), Duration::from_millis(40));
    assert_eq!(share.burst(), 5);
    assert_eq!(share.replenish_all(), Duration::from_millis(200));
    // One share is the whole quota; a burst that does not divide is rounded down.
    assert_eq!(Quota::per_minute(7).split(1).unwrap(), Quota::per_minute(7));
    assert_eq!(
        Quota::per_second(10)
            .with_burst(7)
            .split(2)
            .unwrap()
            .burst(),
        3
    );
}

#[test]
fn split_multiplies_the_rounded_interval_so_shares_never_exceed_the_global_rate() {
    // per_second(3) emits every 333,333,334 ns; three shares emit every 3 times that.
    let share = Quota::per_second(3).split(3).unwrap();
    assert_eq!(
        share.emission_interval(),
        Duration::from_nanos(1_000_000_002)
    );
    assert_eq!(share.burst(), 1);
}

#[test]
fn split_into_more_shares_than_the_burst_gives_each_a_burst_of_one() {
    let share = Quota::per_second(100).with_burst(3).split(4).unwrap();
    assert_eq!(share.burst(), 1);
    assert_eq!(share.emission_interval(), Duration::from_millis(40));
    assert_eq!(Quota::per_second(2).split(1_000).unwrap().burst(), 1);
}

#[test]
fn split_into_zero_shares_is_rejected() {
    assert_eq!(Quota::per_second(10).split(0), Err(QuotaError::ZeroShares));
    assert_eq!(
        QuotaError::ZeroShares.to_string(),
        "a quota must be split into at least 1 share"
    );
}

#[test]
fn split_whose_interval_overflows_is_rejected() {
    let half = Quota::try_new(Duration::from_nanos(1 << 61), 1).unwrap();
    assert_eq!(
        half.split(2).unwrap().emission_interval(),
        Duration::from_nanos(1 << 62)
    );
    let over_half = Quota::try_new(Duration::from_nanos((1 << 61) + 1), 1).unwrap();
    assert_eq!(over_half.split(2), Err(QuotaError::PeriodTooLong));
    assert_eq!(
        Quota::with_period(LONGEST_PERIOD).split(2),
        Err(QuotaError::PeriodTooLong)
    );
}
