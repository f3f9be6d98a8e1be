//! `Nanos`: construction, ordering, checked and saturating arithmetic at the end of the clock.

use cellrate::Nanos;
use std::time::Duration;

#[test]
fn new_and_as_u64_round_trip() {
    for ns in [0, 1, 1_500, 1 << 40, u64::MAX - 1, u64::MAX] {
        assert_eq!(Nanos::new(ns).as_u64(), ns);
    }
    assert_eq!(Nanos::ZERO.as_u64(), 0);
    assert_eq!(Nanos::MAX.as_u64(), u64::MAX);
    assert_eq!(Nanos::default(), Nanos::ZERO);
}

#[test]
fn nanos_order_like_their_counts() {
    assert!(Nanos::ZERO < Nanos::new(1));
    assert!(Nanos::new(1_499) < Nanos::new(1_500));
    assert!(Nanos::new(u64::MAX - 1) < Nanos::MAX);
    assert_eq!(Nanos::new(7).max(Nanos::new(3)), Nanos::new(7));
}

#[test]
fn saturating_add_stops_at_max() {
    assert_eq!(
        Nanos::new(10).saturating_add(Duration::from_nanos(5)),
        Nanos::new(15)
    );
    assert_eq!(
        Nanos::MAX.saturating_add(Duration::from_nanos(1)),
        Nanos::MAX
    );
    assert_eq!(
        Nanos::new(u64::MAX - 3).saturating_add(Duration::from_nanos(3)),
        Nanos::MAX
    );
    assert_eq!(
        Nanos::new(u64::MAX - 3).saturating_add(Duration::from_nanos(4)),
        Nanos::MAX
    );
    assert_eq!(Nanos::ZERO.saturating_add(Duration::MAX), Nanos::MAX);
}

#[test]
fn saturating_duration_since_is_zero_for_a_later_start() {
    let (early, late) = (Nanos::new(100), Nanos::new(350));
    assert_eq!(
        late.saturating_duration_since(early),
        Duration::from_nanos(250)
    );
    assert_eq!(early.saturating_duration_since(late), Duration::ZERO);
    assert_eq!(
        Nanos::MAX.saturating_duration_since(Nanos::ZERO),
        Duration::from_nanos(u64::MAX)
    );
}

#[test]
fn nanos_convert_to_a_duration_since_the_origin() {
    assert_eq!(
        Duration::from(Nanos::new(2_500_000_001)),
        Duration::new(2, 500_000_001)
    );
    assert_eq!(Duration::from(Nanos::ZERO), Duration::ZERO);
}

#[test]
fn nanos_format_as_nanoseconds() {
    assert_eq!(Nanos::new(1_500).to_string(), "1500ns");
    assert_eq!(format!("{:?}", Nanos::new(42)), "Nanos(42)");
}
