//! `Quota`: the constructors, their rounding, every error of the fallible forms, the messages
//! of the panicking forms and the `QuotaError` texts.

use cellrate::{Quota, QuotaError};
use std::time::Duration;

const SECOND_NS: u64 = 1_000_000_000;
const HOUR_NS: u64 = 3_600 * SECOND_NS;

/// The longest period and depth: 2^62 nanoseconds, about 146 years.
const LONGEST_PERIOD: Duration = Quota::MAX_DEPTH;
const MAX_DEPTH: u64 = 1 << 62;

#[test]
fn per_second_divides_a_second_into_whole_intervals() {
    let q = Quota::per_second(100);
    assert_eq!(q.emission_interval(), Duration::from_nanos(10_000_000));
    assert_eq!(q.emission_interval(), Duration::from_millis(10));
    assert_eq!(q.burst(), 100);
    assert_eq!(q.replenish_all(), Duration::from_nanos(SECOND_NS));
    assert_eq!(q.replenish_all(), Duration::from_secs(1));
}

#[test]
fn rates_that_do_not_divide_the_period_round_the_interval_up() {
    // Rounding up keeps the long-run rate at or below the one configured.
    assert_eq!(
        Quota::per_second(3).emission_interval(),
        Duration::from_nanos(333_333_334)
    );
    assert_eq!(
        Quota::per_second(3).replenish_all(),
        Duration::from_nanos(1_000_000_002)
    );
    assert_eq!(
        Quota::per_second(7).emission_interval(),
        Duration::from_nanos(142_857_143)
    );
    assert_eq!(
        Quota::per_minute(7).emission_interval(),
        Duration::from_nanos(8_571_428_572)
    );
    assert_eq!(
        Quota::per_hour(7).emission_interval(),
        Duration::from_nanos(514_285_714_286)
    );
    for n in [
        1,
        2,
        3,
        6,
        7,
        9,
        11,
        13,
        1_000,
        999_999_937,
        1_000_000_000,
        u32::MAX,
    ] {
        for (quota, period) in [
            (Quota::per_second(n), SECOND_NS),
            (Quota::per_minute(n), 60 * SECOND_NS),
            (Quota::per_hour(n), HOUR_NS),
        ] {
            let t = quota.emission_interval().as_nanos() as u64;
            let n = u64::from(n);
            assert!(
                t * n >= period,
                "{quota:?}: {n} tokens arrive before the period ends"
            );
            assert!(
                (t - 1) * n < period,
                "{quota:?}: interval not the smallest that fits"
            );
            assert_eq!(quota.burst(), n as u32);
        }
    }
}

#[test]
fn per_minute_and_per_hour_use_their_periods() {
    assert_eq!(
        Quota::per_minute(60).emission_interval(),
        Duration::from_secs(1)
    );
    assert_eq!(Quota::per_minute(60).burst(), 60);
    assert_eq!(
        Quota::per_hour(1).emission_interval(),
        Duration::from_nanos(HOUR_NS)
    );
    assert_eq!(Quota::per_hour(1).burst(), 1);
    assert_eq!(
        Quota::per_hour(3_600).emission_interval(),
        Duration::from_secs(1)
    );
}

#[test]
fn rates_faster_than_one_per_nanosecond_round_to_one_nanosecond() {
    let q = Quota::per_second(1_000_000_000);
    assert_eq!(q.emission_interval(), Duration::from_nanos(1));
    assert_eq!(q.burst(), 1_000_000_000);
    // What migrants from governor write for "effectively unlimited": accepted, never faster
    // than asked (10^9 a second), with the burst asked for.
    for n in [1_000_000_001, 2_000_000_000, u32::MAX] {
        let q = Quota::per_second(n);
        assert_eq!(
            (q.emission_interval(), q.burst()),
            (Duration::from_nanos(1), n)
        );
        assert_eq!(Quota::try_new(Duration::from_nanos(1), n), Ok(q));
    }
    let unlimited =
        cellrate::Limiter::with_clock(Quota::per_second(u32::MAX), cellrate::ManualClock::new());
    assert!(unlimited.check_n(u32::MAX).is_ok());
    assert!(unlimited.check().is_err());
    // A minute and an hour hold more nanoseconds than a u32 has values.
    assert_eq!(
        Quota::per_minute(u32::MAX).emission_interval(),
        Duration::from_nanos(14)
    );
}

#[test]
#[should_panic(expected = "Quota::per_second(0): quota rate must be at least 1 token per period")]
fn per_second_of_zero_panics_with_the_reason() {
    let _ = Quota::per_second(0);
}

#[test]
fn with_period_emits_one_token_per_period_with_burst_one() {
    let q = Quota::with_period(Duration::from_millis(250));
    assert_eq!(q.emission_interval(), Duration::from_nanos(250_000_000));
    assert_eq!(q.burst(), 1);
    assert_eq!(q.replenish_all(), Duration::from_millis(250));
    assert_eq!(
        Quota::with_period(Duration::from_nanos(1)).emission_interval(),
        Duration::from_nanos(1)
    );
    let longest = Quota::with_period(LONGEST_PERIOD);
    assert_eq!(longest.emission_interval(), Duration::from_nanos(MAX_DEPTH));
    assert_eq!(longest.replenish_all(), Duration::from_nanos(MAX_DEPTH));
}

#[test]
fn with_burst_keeps_the_rate_and_sets_the_capacity() {
    let q = Quota::per_second(100).with_burst(10);
    assert_eq!(q.emission_interval(), Duration::from_millis(10));
    assert_eq!(q.burst(), 10);
    assert_eq!(q.replenish_all(), Duration::from_nanos(100_000_000));
    assert_eq!(q.replenish_all(), Duration::from_millis(100));

    let q = Quota::per_second(2).with_burst(6);
    assert_eq!(q.emission_interval(), Duration::from_millis(500));
    assert_eq!(q.replenish_all(), Duration::from_secs(3));

    let raised = Quota::with_period(Duration::from_secs(2)).with_burst(1_000);
    assert_eq!(raised.emission_interval(), Duration::from_secs(2));
    assert_eq!(
        raised.replenish_all(),
        Duration::from_nanos(2_000 * SECOND_NS)
    );
}

#[test]
fn try_new_is_the_general_constructor() {
    let q = Quota::try_new(Duration::from_nanos(7), 3).unwrap();
    assert_eq!(
        (q.emission_interval(), q.burst(), q.replenish_all()),
        (Duration::from_nanos(7), 3, Duration::from_nanos(21))
    );
    assert_eq!(
        Quota::try_new(Duration::from_millis(10), 10),
        Ok(Quota::per_second(100).with_burst(10))
    );
    assert_ne!(
        Quota::per_second(100),
        Quota::per_second(100).with_burst(10)
    );
}

#[test]
fn the_fallible_forms_agree_with_the_panicking_forms() {
    // `try_new` of the interval the per-period forms round to gives the same quota.
    let third = Duration::from_nanos(333_333_334);
    assert_eq!(Quota::try_new(third, 3), Ok(Quota::per_second(3)));
    let seventh = Duration::from_nanos(8_571_428_572);
    assert_eq!(Quota::try_new(seventh, 7), Ok(Quota::per_minute(7)));
    let eleventh = Duration::from_nanos(327_272_727_273);
    assert_eq!(Quota::try_new(eleventh, 11), Ok(Quota::per_hour(11)));
    let period = Duration::from_micros(1_500);
    assert_eq!(Quota::try_new(period, 1), Ok(Quota::with_period(period)));
    assert_eq!(
        Quota::per_second(3).try_with_burst(9),
        Ok(Quota::per_second(3).with_burst(9))
    );
}

#[test]
fn a_zero_burst_is_rejected() {
    assert_eq!(
        Quota::per_second(5).try_with_burst(0),
        Err(QuotaError::ZeroBurst)
    );
    assert_eq!(
        Quota::try_new(Duration::from_secs(1), 0),
        Err(QuotaError::ZeroBurst)
    );
}

#[test]
fn a_zero_period_is_rejected() {
    assert_eq!(
        Quota::try_new(Duration::ZERO, 1),
        Err(QuotaError::ZeroPeriod)
    );
    assert_eq!(
        Quota::try_new(Duration::ZERO, 5),
        Err(QuotaError::ZeroPeriod)
    );
    assert_eq!(
        Quota::try_new(Duration::ZERO, 0),
        Err(QuotaError::ZeroPeriod)
    );
}

#[test]
fn a_period_longer_than_the_longest_depth_is_rejected() {
    let one_too_long = LONGEST_PERIOD + Duration::from_nanos(1);
    assert_eq!(
        Quota::try_new(one_too_long, 1),
        Err(QuotaError::PeriodTooLong)
    );
    assert_eq!(
        Quota::try_new(Duration::MAX, 1),
        Err(QuotaError::PeriodTooLong)
    );
    assert!(Quota::try_new(LONGEST_PERIOD, 1).is_ok());
}

#[test]
fn a_depth_beyond_the_longest_is_rejected() {
    assert_eq!(
        Quota::per_hour(1).try_with_burst(u32::MAX),
        Err(QuotaError::DepthOverflow {
            interval_ns: HOUR_NS,
            burst: u32::MAX
        })
    );
    assert_eq!(
        Quota::try_new(LONGEST_PERIOD, 2),
        Err(QuotaError::DepthOverflow {
            interval_ns: MAX_DEPTH,
            burst: 2
        })
    );
    // Exactly at the limit: 2^60 * 4 fits, one more nanosecond does not.
    let t = MAX_DEPTH / 4;
    assert_eq!(
        Quota::try_new(Duration::from_nanos(t), 4)
            .unwrap()
            .replenish_all(),
        Duration::from_nanos(MAX_DEPTH)
    );
    assert!(matches!(
        Quota::try_new(Duration::from_nanos(t + 1), 4),
        Err(QuotaError::DepthOverflow { burst: 4, .. })
    ));
    // The largest burst an hourly interval allows, and one more.
    let max_burst = (MAX_DEPTH / HOUR_NS) as u32;
    assert!(Quota::per_hour(1).try_with_burst(max_burst).is_ok());
    assert!(Quota::per_hour(1).try_with_burst(max_burst + 1).is_err());
}

#[test]
#[should_panic(expected = "Quota::per_second(0): quota rate must be at least 1 token per period")]
fn per_second_zero_panics_with_the_reason() {
    let _ = Quota::per_second(0);
}

#[test]
#[should_panic(expected = "Quota::per_minute(0): quota rate must be at least 1 token per period")]
fn per_minute_zero_panics_with_the_reason() {
    let _ = Quota::per_minute(0);
}

#[test]
#[should_panic(expected = "Quota::per_hour(0): quota rate must be at least 1 token per period")]
fn per_hour_zero_panics_with_the_reason() {
    let _ = Quota::per_hour(0);
}

#[test]
#[should_panic(expected = "Quota::with_period(0ns): quota period must be at least 1 nanosecond")]
fn with_period_zero_panics_with_the_reason() {
    let _ = Quota::with_period(Duration::ZERO);
}

#[test]
#[should_panic(expected = "quota period must be at most 2^62 nanoseconds")]
fn with_period_too_long_panics_with_the_reason() {
    let _ = Quota::with_period(Duration::MAX);
}

#[test]
#[should_panic(expected = "Quota::with_burst(0): quota burst must be at least 1 token")]
fn with_burst_zero_panics_with_the_reason() {
    let _ = Quota::per_second(10).with_burst(0);
}

#[test]
#[should_panic(expected = "Quota::with_burst(4294967295): quota depth too long")]
fn with_burst_overflowing_the_depth_panics_with_the_reason() {
    let _ = Quota::per_hour(1).with_burst(u32::MAX);
}

#[test]
fn quota_errors_display_their_reason() {
    assert_eq!(
        QuotaError::ZeroRate.to_string(),
        "quota rate must be at least 1 token per period"
    );
    assert_eq!(
        QuotaError::ZeroBurst.to_string(),
        "quota burst must be at least 1 token"
    );
    assert_eq!(
        QuotaError::ZeroPeriod.to_string(),
        "quota period must be at least 1 nanosecond"
    );
    assert_eq!(
        QuotaError::PeriodTooLong.to_string(),
        "quota period must be at most 2^62 nanoseconds (about 146 years)"
    );
    let overflow = QuotaError::DepthOverflow {
        interval_ns: HOUR_NS,
        burst: u32::MAX,
    };
    assert_eq!(
        overflow.to_string(),
        "quota depth too long: burst 4294967295 x emission interval 3600000000000 ns \
         exceeds 2^62 nanoseconds (about 146 years)"
    );
}

#[test]
fn quota_error_is_a_std_error() {
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(QuotaError::ZeroBurst);
    assert_eq!(boxed.to_string(), "quota burst must be at least 1 token");
    assert!(boxed.source().is_none());
}

#[test]
fn quota_debug_names_interval_and_burst() {
    let text = format!("{:?}", Quota::per_second(3).with_burst(9));
    assert_eq!(text, "Quota { emission_interval_ns: 333333334, burst: 9 }");
}
