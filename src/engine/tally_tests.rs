use super::*;

#[test]
fn lanes_are_bounded() {
    assert_eq!(Tally::with_lanes(0).lane_count(), 1);
    assert_eq!(Tally::with_lanes(3).lane_count(), 3);
    assert_eq!(Tally::with_lanes(1000).lane_count(), 64);
}

#[test]
fn totals_are_exact_while_threads_come_and_go() {
    // Waves of threads, more at once than lanes, each ending while the next wave and the
    // long-lived ones count: lanes change hands mid-count, and some threads share a line.
    let counts = StripedCounts::<1>::with_lanes(3);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| (0..50_000).for_each(|_| counts.add(0)));
        }
        for _ in 0..20 {
            let wave: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..2_000).for_each(|_| counts.add(0))))
                .collect();
            wave.into_iter().for_each(|t| t.join().unwrap());
        }
    });
    assert_eq!(counts.sums(), [2 * 50_000 + 20 * 4 * 2_000]);
}

#[test]
fn totals_are_exact_under_threads() {
    // More threads than lanes, so that some share the shared line.
    let tally = Tally::with_lanes(2);
    std::thread::scope(|s| {
        for t in 0..6u32 {
            let tally = &tally;
            s.spawn(move || {
                for i in 0..10_000u32 {
                    tally.record(i % 3 != 0, t % 2);
                }
            });
        }
    });
    let t = tally.totals();
    // Each thread: 3,334 denials (i % 3 == 0) and 6,666 admissions, peeks when cost is 0.
    assert_eq!(t.denied, 6 * 3_334);
    assert_eq!(t.peeks, 3 * 6_666);
    assert_eq!(t.allowed, 3 * 6_666);
}
