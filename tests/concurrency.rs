//! One `Limiter` hammered by 8 threads: no token is admitted twice, none is lost, with the clock
//! frozen, with the clock moving and with refunds racing the checks.

use crate::common;

use cellrate::{Clock, Limiter, ManualClock, Nanos, Quota};
use common::quota;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Duration;

const THREADS: usize = 8;

/// Runs `work(thread index)` on `THREADS` threads released together; returns their results.
fn on_threads<R: Send>(work: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let start = Barrier::new(THREADS);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let (start, work) = (&start, &work);
                s.spawn(move || {
                    start.wait();
                    work(i)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// At a frozen time the burst is all there is: exactly `burst` checks pass, however many
/// threads try. The largest burst keeps the threads admitting concurrently for a while, which
/// is where a lost update (two admissions recorded as one) would show as an extra admission.
#[test]
fn a_frozen_clock_admits_exactly_the_burst() {
    for burst in [1, 7, 1_000, 200_000] {
        let clock = ManualClock::new();
        clock.set(Nanos::new(1_000_000));
        let limiter = Limiter::with_clock(Quota::per_second(10).with_burst(burst), clock);
        let attempts = burst / 4 + 200; // together, twice the burst and more
        let admitted: u32 =
            on_threads(|_| (0..attempts).filter(|_| limiter.check().is_ok()).count() as u32)
                .into_iter()
                .sum();
        assert_eq!(admitted, burst, "burst {burst}");
        assert_eq!(limiter.available(), 0);
    }
}

/// Mixed costs at a frozen time: every admitted token is recorded (the level falls by exactly
/// the admitted cost) and the bucket ends with less than the largest cost left. The burst is
/// large so that the threads keep admitting concurrently for a while.
#[test]
fn a_frozen_clock_accounts_for_every_admitted_cost() {
    const BURST: u32 = 200_003;
    let limiter = Limiter::with_clock(quota(1_000, BURST), ManualClock::new());
    let spent: u32 = on_threads(|i| {
        let cost = i as u32 % 4 + 1;
        (0..30_000)
            .filter(|_| limiter.check_n(cost).is_ok())
            .count() as u32
            * cost
    })
    .into_iter()
    .sum();
    let left = limiter.available();
    assert_eq!(spent + left, BURST, "spent {spent}, left {left}");
    // Unless some thread was denied, all 600,000 tokens asked for would have been spent.
    assert!(
        left < 4,
        "{left} tokens left although every cost up to 4 kept trying"
    );
}

/// The bound with a moving clock. Every admission at `now` moves the TAT from `tat` to
/// `max(tat, now) + T >= tat + T`, and the CAS makes the admissions a chain of such moves, so
/// after `k` admissions `TAT >= k*T` (it starts at 0). Each admission also needs its new TAT at
/// most `D = b*T` ahead of its `now`, and every `now` is at most the final clock reading `E`:
/// so `k*T <= TAT <= E + D`, that is `k <= b + floor(E / T)` with no `+1`: an admission exactly
/// at a multiple of `T` is already counted by the floor (b = 1, T = 10, E = 10 admits 2).
/// After the final drain at `E` a denial means `TAT + T > E + D`, and each admission adds at
/// most `T` beyond `E` (`TAT <= E + k*T`), so also `k >= b`.
///
/// The clock thread and the checkers pace each other: one clock step per `PACE` attempts, and
/// no checker more than `SLACK` attempts ahead of the clock. So time moves all along, and
/// tokens arrive slower than requests, which keeps the bound nearly tight.
#[test]
fn a_moving_clock_never_admits_more_than_the_burst_plus_the_elapsed_tokens() {
    const PACE: u64 = 8;
    const SLACK: u64 = 64;
    const ATTEMPTS: u64 = 5_000;
    for (interval, burst, step) in [(7_000, 10, 3_001), (1_000, 1, 1_000), (10, 50, 1)] {
        let clock = ManualClock::new();
        let limiter = Limiter::with_clock(quota(interval, burst), clock.clone());
        // Relaxed throughout: these counters and the flag only pace the threads; the clock
        // and the limiter are read after the scope joins every thread.
        let (attempts, steps) = (AtomicU64::new(0), AtomicU64::new(0));
        let done = AtomicBool::new(false);
        let mut admitted = 0;
        std::thread::scope(|s| {
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    if attempts.load(Ordering::Relaxed)
                        >= (steps.load(Ordering::Relaxed) + 1) * PACE
                    {
                        clock.advance(Duration::from_nanos(step));
                        steps.fetch_add(1, Ordering::Relaxed);
                    } else {
                        std::thread::yield_now();
                    }
                }
            });
            admitted = on_threads(|_| {
                let mut admitted = 0;
                for _ in 0..ATTEMPTS {
                    while attempts.load(Ordering::Relaxed)
                        > steps.load(Ordering::Relaxed) * PACE + SLACK
                    {
                        std::thread::yield_now();
                    }
                    attempts.fetch_add(1, Ordering::Relaxed);
                    admitted += u64::from(limiter.check().is_ok());
                }
                admitted
            })
            .into_iter()
            .sum();
            done.store(true, Ordering::Relaxed);
        });
        // The clock is frozen from here: drain what is left at the final time.
        while limiter.check().is_ok() {
            admitted += 1;
        }
        let elapsed = clock.now().as_u64();
        let bound = u64::from(burst) + elapsed / interval;
        let case = format!("T {interval} b {burst} E {elapsed}");
        assert!(elapsed > step * 1_000, "{case}: the clock hardly moved");
        assert!(admitted <= bound, "{case}: admitted {admitted} > {bound}");
        assert!(admitted >= u64::from(burst), "{case}: admitted {admitted}");
    }
}

/// Refunds racing checks at a frozen time. Each thread keeps the first `KEPT` tokens it is
/// admitted and gives back every later one at once, so the bucket never runs dry and spends
/// and refunds race all along. A refund of 1 by a thread holding that token is never capped
/// (the level is at most `b - 1` while it is out), so it restores exactly one token. Hence
/// `level = b - admitted + refunded` exactly at the end: a lost spend would raise the level, a
/// lost refund lower it; and admitted exceeds the burst by the refunded amount only.
#[test]
fn refunds_racing_checks_restore_exactly_what_they_give_back() {
    const KEPT: u32 = 3;
    let burst = 50; // more than THREADS * KEPT: every check passes
    let limiter = Limiter::with_clock(quota(1_000, burst), ManualClock::new());
    let counts = on_threads(|_| {
        let (mut admitted, mut refunded) = (0u32, 0u32);
        for _ in 0..50_000 {
            if limiter.check().is_ok() {
                admitted += 1;
                if admitted > KEPT {
                    limiter.refund_n(1);
                    refunded += 1;
                }
            }
        }
        (admitted, refunded)
    });
    let admitted: u32 = counts.iter().map(|c| c.0).sum();
    let refunded: u32 = counts.iter().map(|c| c.1).sum();
    assert_eq!(admitted, 50_000 * THREADS as u32, "a check was denied");
    assert_eq!(admitted - refunded, KEPT * THREADS as u32);
    assert_eq!(limiter.available(), burst + refunded - admitted);
}

/// Over-refunds racing checks at a frozen time. A refund of more than was taken is capped at a
/// full bucket, so the level ends as `b - admitted + given`, where `given` (what the refunds
/// really gave back) is at least 0 and at most the refunded tokens, each capped at the burst:
/// every admission is paid for by the burst or a refund, and no spend or refund vanishes.
#[test]
fn over_refunds_racing_checks_never_overfill_the_bucket() {
    let burst = 20;
    let limiter = Limiter::with_clock(quota(1_000, burst), ManualClock::new());
    let counts = on_threads(|i| {
        let (mut admitted, mut refunded_tokens) = (0u64, 0u64);
        for n in 0..50_000u32 {
            if limiter.check().is_ok() {
                admitted += 1;
                if (n + i as u32).is_multiple_of(5) {
                    let give = if n.is_multiple_of(2) { u32::MAX } else { 3 };
                    limiter.refund_n(give);
                    refunded_tokens += u64::from(give.min(burst));
                }
            }
        }
        (admitted, refunded_tokens)
    });
    let admitted: u64 = counts.iter().map(|c| c.0).sum();
    let refunded_tokens: u64 = counts.iter().map(|c| c.1).sum();
    let level = u64::from(limiter.available());
    let burst = u64::from(burst);
    assert!(refunded_tokens > 0, "no refund raced");
    assert!(admitted > burst, "the refunds never gave anything back");
    assert!(
        level + admitted >= burst,
        "level {level}, admitted {admitted}: a spend vanished"
    );
    assert!(
        level + admitted <= burst + refunded_tokens,
        "level {level}, admitted {admitted}, refunded {refunded_tokens}: a token appeared"
    );
    // The level reported is the level there is: exactly that many more pass.
    let more = (0..=burst).take_while(|_| limiter.check().is_ok()).count() as u64;
    assert_eq!(more, level);
}
