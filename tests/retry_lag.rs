//! A refusal decided on a reading that lags the true time (a cached clock's) carries the lag in
//! its `retry_after`, so that a retry made that long afterwards passes however much its own
//! reading lags, in every check form that reads the clock; an exact reading adds nothing. A
//! limiter reads its clock one way, fixed by the quota it is built with, also for a key's
//! bucket under another quota.

use crate::common::LaggingClock;
use cellrate::{Allowed, Denied, KeyedLimiter, Limiter, Nanos, Quota};
use std::time::Duration;

/// The clock's coarse readings serve tolerances of a millisecond or more and lag by up to two.
const STEP: Duration = Duration::from_millis(1);
const BOUND: Duration = Duration::from_millis(2);
/// 10 ms a token, 100 ms deep: a check accepts a reading 6.25 ms stale, the coarse one.
fn deep() -> Quota {
    Quota::per_second(100).with_burst(10)
}
/// 1 ms a token, 10 ms deep: a check accepts 0.625 ms, under a step, so it reads exactly.
fn shallow() -> Quota {
    Quota::per_second(1_000).with_burst(10)
}

/// The rate of `quota` on the other side of the line between the readings: 10 ms deep beside
/// `deep()`, which would read exactly on a limiter of its own; 100 ms deep beside
/// `shallow()`, which would read coarsely. A key's bucket under it is read as its limiter's
/// quota says, and its next token is one interval away as under `quota`.
fn other_side(quota: Quota) -> Quota {
    if quota == deep() {
        quota.with_burst(1)
    } else {
        quota.with_burst(100)
    }
}

type Check = Box<dyn Fn() -> Result<Allowed, Denied>>;

/// Every check form that reads the clock, each on a limiter of its own.
fn forms(quota: Quota, clock: &LaggingClock) -> Vec<(&'static str, Check)> {
    let limiter = || Limiter::with_clock(quota, clock.clone());
    let keyed = || {
        KeyedLimiter::<u64, _>::builder(quota)
            .max_keys(16)
            .clock(clock.clone())
            .build()
    };
    let (a, b, c, d, e, f, g) = (
        limiter(),
        limiter(),
        keyed(),
        keyed(),
        keyed(),
        keyed(),
        keyed(),
    );
    vec![
        ("Limiter::check", Box::new(move || a.check())),
        ("Limiter::check_n", Box::new(move || b.check_n(1))),
        ("check_key", Box::new(move || c.check_key(&7))),
        ("key().check", Box::new(move || d.key(&7).check())),
        (
            "key(k).with_quota(other side).check_n",
            Box::new(move || e.key(&7).with_quota(other_side(quota)).check_n(1)),
        ),
        ("key().check_n", Box::new(move || f.key(&7).check_n(1))),
        (
            "check_many",
            Box::new(move || g.check_many(&[(&7u64, 1)])[0]),
        ),
    ]
}

/// Drains form `i` with its readings lagging by `before`, then retries `retry_after` after the
/// refusal with them lagging by `after`: the form's name, the refusal's `retry_after` and
/// whether the retry passed.
fn retry(
    quota: Quota,
    i: usize,
    before: Duration,
    after: Duration,
) -> (&'static str, Duration, bool) {
    let clock = LaggingClock::new(STEP, BOUND);
    clock.truth.set(Nanos::new(10_000_000_000));
    let (name, check) = forms(quota, &clock).swap_remove(i);
    clock.set_lag(before);
    while check().is_ok() {}
    let refused = check().expect_err(name);
    let wait = refused.retry_after().expect(name);
    clock.truth.advance(wait);
    clock.set_lag(after);
    (name, wait, check().is_ok())
}

#[test]
fn a_retry_made_retry_after_later_passes_whatever_either_reading_lags() {
    let lags = [0, 1, 2].map(Duration::from_millis);
    for i in 0..forms(deep(), &LaggingClock::new(STEP, BOUND)).len() {
        for before in lags {
            for after in lags {
                let (name, wait, passed) = retry(deep(), i, before, after);
                // A drained bucket's next token is one interval away, plus the declared lag.
                assert_eq!(wait, Duration::from_millis(10) + BOUND, "{name}");
                assert!(passed, "{name}: lag {before:?} then {after:?}");
            }
        }
    }
}

#[test]
fn an_exact_reading_adds_nothing_to_retry_after() {
    for i in 0..forms(shallow(), &LaggingClock::new(STEP, BOUND)).len() {
        let (name, wait, passed) = retry(shallow(), i, BOUND, BOUND);
        assert_eq!(wait, Duration::from_millis(1), "{name}");
        assert!(passed, "{name}");
    }
}
