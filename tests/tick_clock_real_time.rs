//! The real-time contract of the default clock, under load: while threads keep every core busy
//! (so that the refresher of the cached time is scheduled late, often by many ticks), bursts of
//! a tight loop check a quota exactly 16 ticks deep (1,000 a second, burst 16: the shallowest
//! quota that reads the cached time), each burst after a pause in which the bucket fills, and
//! stamp real time before and after each admission. In every
//! window of real time `W` bounded by two admissions' stamps, the admissions stamped inside it
//! number at most `burst + (2 W + 2 ticks) / T`: a refresher that wakes late catches up at most
//! two ticks a refresh, so it never hands out more than twice the rate at once.
//!
//! A binary of its own: its busy threads would slow every test beside it.

use cellrate::{Limiter, Quota, TickClock};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const RUN: Duration = Duration::from_secs(3);

#[test]
fn a_late_refresher_never_hands_out_more_than_twice_the_rate() {
    let quota = Quota::per_second(1_000).with_burst(16);
    assert_eq!(quota.replenish_all(), 16 * TickClock::TICK);
    let limiter = Limiter::new(quota);
    let stop = AtomicBool::new(false);
    let busy = std::thread::available_parallelism().map_or(2, |n| n.get());
    let start = Instant::now();
    let admissions = std::thread::scope(|s| {
        for _ in 0..busy {
            s.spawn(|| {
                let mut x = 1u64;
                // Relaxed: a flag to stop spinning; nothing else is published.
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    std::hint::black_box(x);
                }
            });
        }
        // Bursts of checks with pauses between, longer than the bucket's depth: each burst
        // finds the bucket full, the moment when a jump of a late refresher's time would hand
        // out a second bucketful at once.
        let mut admissions = Vec::new();
        while start.elapsed() < RUN {
            let burst_start = Instant::now();
            while burst_start.elapsed() < Duration::from_millis(8) {
                let before = start.elapsed();
                if limiter.check().is_ok() {
                    admissions.push((before, start.elapsed()));
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::Relaxed);
        admissions
    });
    assert!(
        admissions.len() > 200,
        "{} admitted in {RUN:?}",
        admissions.len()
    );
    let (t, burst, tick) = (
        quota.emission_interval(),
        u128::from(quota.burst()),
        TickClock::TICK,
    );
    // Every window from the first stamp of admission i to the last stamp of admission j: one
    // thread made them in order, so the admissions with both stamps inside it are i..=j.
    for i in 0..admissions.len() {
        for j in i..admissions.len() {
            let window = admissions[j].1 - admissions[i].0;
            let inside = (j - i + 1) as u128;
            let bound = burst + (2 * window + 2 * tick).as_nanos() / t.as_nanos();
            assert!(
                inside <= bound,
                "{inside} admitted in {window:?} (from {:?}): more than {bound}",
                admissions[i].0
            );
        }
    }
}
