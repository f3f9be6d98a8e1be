//! `all_of`: one request checked against several limiters, spent in all of them or in none.

use crate::common::{manual, ms};
use cellrate::{all_of, Limit, Limiter, ManualClock, Nanos, Quota};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Barrier;
use std::time::Duration;

/// A limiter of one token every `interval_ms`, holding `burst`, with `spent` spent at 0.
fn spent(interval_ms: u64, burst: u32, spent: u32) -> Limiter<ManualClock> {
    let quota = Quota::try_new(Duration::from_millis(interval_ms), burst).unwrap();
    let (limiter, _) = manual(quota);
    if spent > 0 {
        limiter.at(Nanos::ZERO).check_n(spent).unwrap();
    }
    limiter
}

/// What a limiter answers from `start` on to a fixed mix of peeks and spends: equal for two
/// limiters in the same state, different otherwise.
fn follow_up(limiter: &Limiter<ManualClock>, start: Nanos) -> Vec<String> {
    let mut answers = Vec::new();
    for (i, offset) in [0, 0, 5, 40, 100, 100, 350, 1_000, 2_500, 60_000]
        .into_iter()
        .enumerate()
    {
        let now = Nanos::new(start.as_u64() + offset * 1_000_000);
        answers.push(format!("avail {}", limiter.at(now).available()));
        answers.push(format!("{:?}", limiter.at(now).check_n([1, 2, 3][i % 3])));
    }
    answers
}

#[test]
fn a_refusal_leaves_every_limiter_exactly_as_it_was() {
    // (interval ms, burst, spent): the last one refuses 2 tokens.
    let setups = [(100, 5, 0), (1_000, 10, 3), (10, 200, 50), (500, 4, 3)];
    let make = || setups.map(|(t, b, s)| spent(t, b, s));
    let [a, b, c, d] = make();
    let twins = make();
    let refused = all_of(&[(&a, 2), (&b, 2), (&c, 2), (&d, 2)])
        .at(ms(0))
        .check();
    assert!(refused.is_err());
    for (limiter, twin) in [&a, &b, &c, &d].into_iter().zip(&twins) {
        assert_eq!(follow_up(limiter, ms(0)), follow_up(twin, ms(0)));
    }
}

#[test]
fn an_admission_spends_in_every_limiter() {
    let [a, b] = [spent(100, 3, 0), spent(1_000, 100, 0)];
    let allowed = all_of(&[(&a, 2), (&b, 2)]).at(Nanos::ZERO).check().unwrap();
    // The smallest remaining (a: 1) and the longest reset_after (b: 2 s).
    assert_eq!(allowed.remaining(), 1);
    assert_eq!(allowed.reset_after(), Duration::from_secs(2));
    assert_eq!(follow_up(&a, ms(0)), follow_up(&spent(100, 3, 2), ms(0)));
    assert_eq!(
        follow_up(&b, ms(0)),
        follow_up(&spent(1_000, 100, 2), ms(0))
    );
}

#[test]
fn a_refusal_reports_the_strictest_figures_of_all_limiters() {
    let admits = spent(1_000, 100, 50); // remaining 50, full in 50 s
    let slow = spent(1_000, 2, 1); // refuses 2: retry 1 s, full in 1 s
    let deep = spent(10, 200, 199); // refuses 2: retry 10 ms, full in 1.99 s
    let small = spent(100, 5, 4); // refuses 2: retry 100 ms, remaining 1
    let limits: [(&dyn Limit, u32); 4] = [(&admits, 2), (&slow, 2), (&deep, 2), (&small, 2)];
    let refused = all_of(&limits).at(Nanos::ZERO).check().unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_secs(1)));
    assert_eq!(refused.remaining(), 1);
    // The admitting limit's level as it stands (50 s), not after the spend it rolled back.
    assert_eq!(refused.reset_after(), Duration::from_secs(50));

    // One limit that can never admit the cost: no retry time, whatever the others say.
    let never = spent(1, 1, 0);
    let limits: [(&dyn Limit, u32); 3] = [(&slow, 2), (&never, 2), (&small, 2)];
    let refused = all_of(&limits).at(Nanos::ZERO).check().unwrap_err();
    assert_eq!(refused.retry_after(), None);
    assert_eq!(refused.remaining(), 1);
    assert_eq!(refused.reset_after(), Duration::from_secs(1));
}

#[test]
fn an_empty_set_admits_everything() {
    // Costs are the limits' own now, so an empty set has none to vary: every form admits.
    let none = all_of(&[]);
    for none in [none, none.at(Nanos::MAX)] {
        let allowed = none.check().unwrap();
        assert_eq!(allowed.remaining(), u32::MAX);
        assert_eq!(allowed.reset_after(), Duration::ZERO);
        assert_eq!(none.check_each(), Ok(Vec::new()));
        assert!(none.reserve(Duration::ZERO).unwrap().is_empty());
    }
}

#[test]
fn check_decides_each_limit_at_its_own_clock() {
    let quota = Quota::per_second(10).with_burst(1);
    let (clock_a, clock_b) = (ManualClock::new(), ManualClock::new());
    let a = Limiter::with_clock(quota, clock_a.clone());
    let b = Limiter::with_clock(quota, clock_b.clone());
    assert!(all_of(&[(&a, 1), (&b, 1)]).check().is_ok());
    clock_a.advance(Duration::from_millis(100)); // a's clock has the next token, b's not yet
    for order in [[(&b as &dyn Limit, 1), (&a, 1)], [(&a, 1), (&b, 1)]] {
        let refused = all_of(&order).check().unwrap_err();
        assert_eq!(refused.retry_after(), Some(Duration::from_millis(100)));
    }
    assert_eq!(
        (a.available(), b.available()),
        (1, 0),
        "a's spend was given back"
    );
    clock_b.advance(Duration::from_millis(100));
    assert!(all_of(&[(&a, 1), (&b, 1)]).check().is_ok());
    assert_eq!((a.available(), b.available()), (0, 0));
}

#[test]
fn the_order_of_the_limits_does_not_change_the_outcome() {
    // (interval ms, burst, spent) for three limiters; costs 1..=4 at one instant.
    let setups = [
        [(100, 5, 1), (1_000, 3, 0), (10, 50, 46)],
        [(100, 2, 0), (7, 9, 9), (1, 1, 0)],
    ];
    let orders = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    for setup in setups {
        for cost in 0..=4 {
            let mut seen = Vec::new();
            for order in orders {
                let made = setup.map(|(t, b, s)| spent(t, b, s));
                let limits: Vec<(&dyn Limit, u32)> = order
                    .iter()
                    .map(|&i| (&made[i] as &dyn Limit, cost))
                    .collect();
                let answer = format!("{:?}", all_of(&limits).at(ms(3)).check());
                let after: Vec<_> = made.iter().map(|l| follow_up(l, ms(3))).collect();
                seen.push((answer, after));
            }
            assert!(
                seen.windows(2).all(|w| w[0] == w[1]),
                "{setup:?} cost {cost}"
            );
        }
    }
}

#[test]
fn concurrent_overlapping_checks_never_admit_beyond_a_burst_and_refusals_leave_no_trace() {
    const ROUNDS: usize = 20;
    const CHECKS: usize = 400;
    let bursts = [300u32, 200, 400, 100];
    // (limiters, cost) per thread; every limiter is shared by at least two threads.
    let plans: [(&[usize], u32); 4] = [(&[0, 1], 1), (&[1, 2], 2), (&[2, 3], 1), (&[3, 0, 1], 3)];
    for _ in 0..ROUNDS {
        let clock = ManualClock::new();
        clock.set(ms(1_000)); // frozen: no token arrives during the round
        let limiters = bursts.map(|b| {
            let quota = Quota::try_new(Duration::from_millis(10), b).unwrap();
            Limiter::with_clock(quota, clock.clone())
        });
        let spent = [0, 1, 2, 3].map(|_| AtomicU32::new(0));
        let start = Barrier::new(plans.len());
        let (mut admitted, mut refused) = (0, 0);
        std::thread::scope(|s| {
            let handles: Vec<_> = plans
                .iter()
                .map(|&(set, cost)| {
                    let (limiters, spent, start) = (&limiters, &spent, &start);
                    s.spawn(move || {
                        start.wait();
                        let limits: Vec<(&dyn Limit, u32)> = set
                            .iter()
                            .map(|&i| (&limiters[i] as &dyn Limit, cost))
                            .collect();
                        let mut outcomes = (0, 0);
                        for _ in 0..CHECKS {
                            if all_of(&limits).check().is_ok() {
                                set.iter()
                                    .for_each(|&i| _ = spent[i].fetch_add(cost, Ordering::Relaxed));
                                outcomes.0 += 1;
                            } else {
                                outcomes.1 += 1;
                            }
                        }
                        outcomes
                    })
                })
                .collect();
            for h in handles {
                let (a, r) = h.join().unwrap();
                (admitted, refused) = (admitted + a, refused + r);
            }
        });
        assert!(
            admitted > 0 && refused > 0,
            "the round must admit and refuse"
        );
        for (i, limiter) in limiters.iter().enumerate() {
            let spent = spent[i].load(Ordering::Relaxed);
            assert!(
                spent <= bursts[i],
                "limiter {i} admitted {spent} > {}",
                bursts[i]
            );
            assert_eq!(
                limiter.available(),
                bursts[i] - spent,
                "limiter {i}: a refusal left a trace"
            );
        }
    }
}
