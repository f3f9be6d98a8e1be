//! `baseline::MutexBucket` against `Limiter`, on random schedules of every operation: checks,
//! reservations (some waiting), cancels, settles below and above the booking, `all_of` with a
//! second limit, and quota changes by every rule. At every step both report the same decision
//! and the same figures (times mostly move forward; checks are sometimes stale). At the end, the
//! requests actually carried out (admissions, and the tokens of bookings not given back) are
//! replayed through a fresh exact bucket in time order, with the same quota changes: every one
//! of them must pass, so no give-back returned more than its booking still held.

use crate::common;

use cellrate::baseline::{MutexBooking, MutexBucket};
use cellrate::{all_of, Allowed, Denied, Limiter, ManualClock, Nanos, Quota, QuotaChange, Ticket};
use common::quota;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::time::Duration;

/// Everything an outcome reports, field by field, so that a mismatch names the field.
#[derive(Debug, PartialEq, Eq)]
struct Report {
    ok: bool,
    remaining: u32,
    reset_after: Duration,
    retry_after: Option<Duration>,
}

fn report(outcome: Result<Allowed, Denied>) -> Report {
    match outcome {
        Ok(a) => Report {
            ok: true,
            remaining: a.remaining(),
            reset_after: a.reset_after(),
            retry_after: None,
        },
        Err(d) => Report {
            ok: false,
            remaining: d.remaining(),
            reset_after: d.reset_after(),
            retry_after: d.retry_after(),
        },
    }
}

/// What was carried out on one limit: admissions at their times, tokens spent
/// unconditionally, and quota changes, in the order they happened.
#[derive(Debug, Clone, Copy)]
enum Carried {
    /// `tokens` admitted at `at`, ready within `wait`.
    Admitted { at: u64, tokens: u32, wait: u64 },
    /// `tokens` spent unconditionally at `at` (a settle above the booking).
    Forced { at: u64, tokens: u32 },
    /// The quota changed at `at`.
    Changed {
        at: u64,
        to: Quota,
        how: QuotaChange,
    },
}

/// A limiter and the mutex bucket on the same quota and start, with what each has booked.
struct Pair {
    limiter: Limiter<ManualClock>,
    bucket: MutexBucket<ManualClock>,
    /// Bookings not yet given back: both sides' records, and the booking's place in `log`.
    bookings: Vec<(Ticket, MutexBooking, usize)>,
    log: Vec<Carried>,
    quota: Quota,
    empty_at: Option<u64>,
}

impl Pair {
    fn new(quota: Quota, empty_at: Option<u64>) -> Pair {
        let limiter = Limiter::with_clock(quota, ManualClock::new());
        let bucket = MutexBucket::with_clock(quota, ManualClock::new());
        let (limiter, bucket) = match empty_at {
            Some(t) => (
                limiter.start_empty_at(true, Nanos::new(t)),
                bucket.start_empty_at(true, Nanos::new(t)),
            ),
            None => (limiter, bucket),
        };
        Pair {
            limiter,
            bucket,
            bookings: Vec::new(),
            log: Vec::new(),
            quota,
            empty_at,
        }
    }

    /// Checks `cost` at `now` on both; fails unless they report the same.
    fn check(&mut self, cost: u32, now: u64, step: &str) -> Result<Report, TestCaseError> {
        let at = Nanos::new(now);
        let gcra = report(self.limiter.check_n_at(cost, at));
        let mutex = report(self.bucket.check_n_at(cost, at));
        prop_assert_eq!(&gcra, &mutex, "check_n_at({}, {}) at {}", cost, now, step);
        if gcra.ok && cost > 0 {
            self.log.push(Carried::Admitted {
                at: now,
                tokens: cost,
                wait: 0,
            });
        }
        Ok(gcra)
    }

    /// Books `cost` at `now`, waiting at most `wait`, on both.
    fn reserve(&mut self, cost: u32, wait: u64, now: u64, step: &str) -> Result<(), TestCaseError> {
        let at = Nanos::new(now);
        let gcra = self
            .limiter
            .reserve_n_at(cost, Duration::from_nanos(wait), at);
        let mutex = self.bucket.reserve_n_at(cost, wait, at);
        match (gcra, mutex) {
            (Ok(gcra), Ok(mutex)) => {
                prop_assert_eq!(gcra.ready_at(), mutex.ready_at(), "ready_at at {}", step);
                prop_assert_eq!(gcra.allowed(), mutex.allowed(), "allowed at {}", step);
                self.log.push(Carried::Admitted {
                    at: now,
                    tokens: cost,
                    wait,
                });
                self.bookings
                    .push((gcra.detach(), mutex, self.log.len() - 1));
            }
            (Err(gcra), Err(mutex)) => {
                prop_assert_eq!(report(Err(gcra)), report(Err(mutex)), "refusal at {}", step);
            }
            (gcra, mutex) => {
                prop_assert!(false, "{:?} against {:?} at {}", gcra, mutex, step);
            }
        }
        Ok(())
    }

    /// Settles booking `which` at `actual` (its cost: a cancel) at `now`, on both.
    fn settle(&mut self, which: usize, actual: Option<u32>, now: u64) {
        if self.bookings.is_empty() {
            return;
        }
        let (ticket, mutex, entry) = self.bookings.swap_remove(which % self.bookings.len());
        let at = Nanos::new(now);
        let reservation = self.limiter.attach(ticket).expect("this limiter's ticket");
        let Carried::Admitted { tokens: cost, .. } = self.log[entry] else {
            unreachable!("a booking's entry is an admission")
        };
        match actual {
            None => {
                reservation.cancel_at(at);
                self.bucket.cancel_at(&mutex, at);
                self.carry(entry, 0);
            }
            Some(actual) => {
                reservation.settle_at(actual, at);
                self.bucket.settle_at(&mutex, actual, at);
                self.carry(entry, actual.min(cost));
                if actual > cost {
                    self.log.push(Carried::Forced {
                        at: now,
                        tokens: actual - cost,
                    });
                }
            }
        }
    }

    /// The admission at `entry` of the log carried out only `tokens`.
    fn carry(&mut self, entry: usize, tokens: u32) {
        if let Carried::Admitted { tokens: t, .. } = &mut self.log[entry] {
            *t = tokens;
        }
    }

    /// Changes the quota at `now` by `how`, on both.
    fn change(&mut self, to: Quota, how: QuotaChange, now: u64) {
        let at = Nanos::new(now);
        self.limiter.set_quota_at(to, how, at);
        self.bucket.set_quota_at(to, how, at);
        self.log.push(Carried::Changed { at: now, to, how });
    }

    /// Compares `available_at(now)` and a peek at `now`, which must agree too.
    fn level(&mut self, now: u64, step: &str) -> Result<(), TestCaseError> {
        let now_ns = Nanos::new(now);
        let (gcra, mutex) = (
            self.limiter.available_at(now_ns),
            self.bucket.available_at(now_ns),
        );
        prop_assert_eq!(gcra, mutex, "available_at({:?}) at {}", now_ns, step);
        let peek = self.check(0, now, step)?;
        prop_assert_eq!(
            peek.remaining,
            gcra,
            "a peek and available_at disagree at {}",
            step
        );
        Ok(())
    }

    /// Replays what was carried out through a fresh exact bucket: every admission must pass.
    fn replay(&self) -> Result<(), TestCaseError> {
        let mut exact = MutexBucket::with_clock(self.quota, ManualClock::new());
        if let Some(t) = self.empty_at {
            exact = exact.start_empty_at(true, Nanos::new(t));
        }
        for carried in &self.log {
            match *carried {
                Carried::Admitted { tokens: 0, .. } => {}
                Carried::Admitted { at, tokens, wait } => {
                    let passed = exact.reserve_n_at(tokens, wait, Nanos::new(at));
                    prop_assert!(
                        passed.is_ok(),
                        "{} tokens carried out at {} (waiting at most {}) beyond the exact \
                         bucket: {:?}",
                        tokens,
                        at,
                        wait,
                        self.log
                    );
                }
                Carried::Forced { at, tokens } => {
                    let booked = exact.reserve_n_at(0, 0, Nanos::new(at)).unwrap();
                    exact.settle_at(&booked, tokens, Nanos::new(at));
                }
                Carried::Changed { at, to, how } => exact.set_quota_at(to, how, Nanos::new(at)),
            }
        }
        Ok(())
    }
}

/// One step of a schedule, in raw numbers that [`run`] scales to the quota.
#[derive(Debug, Clone)]
struct Step {
    /// 0..=3: check, 4..=5: reserve, 6: cancel, 7: settle, 8: all_of, 9: set_quota,
    /// 10: available.
    op: u8,
    /// The cost, reduced to `0..=burst + 2`; also which booking, quota or rule.
    amount: u32,
    /// 0..=3: later by a random gap, 4: later by whole tokens, 5: later by at most one
    /// interval, 6: stale (earlier than the latest time, which stays), 7: exactly at, or 1 ns
    /// before, the instant the last denial said to retry at.
    when: u8,
    /// The gap, stale distance or choice, reduced to the quota's scale.
    raw: u64,
}

fn steps(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<Step>> {
    let step =
        (0..11u8, any::<u32>(), 0..8u8, any::<u64>()).prop_map(|(op, amount, when, raw)| Step {
            op,
            amount,
            when,
            raw,
        });
    prop::collection::vec(step, len)
}

/// Intervals from 1 ns to 10 s (most do not divide a second), bursts 1..=1000, and quotas made
/// by `per_second(n)` (rounded-up intervals, burst n).
fn quotas() -> impl Strategy<Value = Quota> {
    prop_oneof![
        (1..=20u64, 1..=1_000u32).prop_map(|(t, b)| quota(t, b)),
        (1..=10_000_000_000u64, 1..=1_000u32).prop_map(|(t, b)| quota(t, b)),
        (1..=10_000u32).prop_map(Quota::per_second),
        (1..=1_000_000_000u32).prop_map(Quota::per_second),
        (1..=100_000u32, 1..=1_000u32).prop_map(|(n, b)| Quota::per_second(n).with_burst(b)),
    ]
}

const RULES: [QuotaChange; 6] = [
    QuotaChange::KeepSpent,
    QuotaChange::KeepAvailable,
    QuotaChange::Proportional,
    QuotaChange::KeepTime,
    QuotaChange::Full,
    QuotaChange::Empty,
];

/// Runs `steps` on a pair from `start` (full, or empty if `empty`), with a second pair for
/// `all_of`.
fn run(quota: Quota, empty: bool, start: u64, steps: &[Step]) -> Result<(), TestCaseError> {
    let mut pair = Pair::new(quota, empty.then_some(start));
    let other_quota =
        Quota::try_new(quota.emission_interval() * 2, quota.burst().div_ceil(2)).unwrap_or(quota);
    let mut other = Pair::new(other_quota, None);
    // The quotas a change moves between: the first, a deeper and a shallower one.
    let changes = [
        quota,
        Quota::try_new(quota.emission_interval(), quota.burst().saturating_mul(2)).unwrap_or(quota),
        other_quota,
    ];
    let mut latest = start;
    let mut retry_at: Option<u64> = None;
    for (i, s) in steps.iter().enumerate() {
        let (t, b) = (
            pair.limiter.quota().emission_interval_ns(),
            pair.limiter.quota().burst(),
        );
        let d = pair.limiter.quota().depth_ns();
        let now = match s.when {
            0..=3 => latest + s.raw % (2 * d + 1),
            4 => latest + (s.raw % (2 * u64::from(b) + 1)) * t,
            5 => latest + s.raw % (t + 1),
            6 => latest.saturating_sub(s.raw % (2 * d + 1)),
            _ => retry_at
                .map_or(latest, |r| r.saturating_sub(s.raw & 1))
                .max(latest),
        };
        // Only checks may be stale: every other operation's time is no earlier than one
        // already used (the precondition of a give-back's time).
        latest = latest.max(now);
        let fresh = latest;
        // 0..=burst + 2 (in u64: a burst near u32::MAX must not overflow), at most u32::MAX.
        let amount = (u64::from(s.amount) % (u64::from(b) + 3)).min(u64::from(u32::MAX)) as u32;
        let step = format!("step {i} {s:?} now {now}");
        match s.op {
            0..=3 => {
                let outcome = pair.check(amount, now, &step)?;
                if let Some(wait) = outcome.retry_after {
                    retry_at = Some(now.saturating_add(wait.as_nanos() as u64));
                }
            }
            4..=5 => {
                let wait = [0, t, d][(s.raw % 3) as usize];
                pair.reserve(amount, wait, fresh, &step)?;
            }
            6 => pair.settle(s.amount as usize, None, fresh),
            7 => {
                let actual = (s.raw % (u64::from(b) + 2)) as u32;
                pair.settle(s.amount as usize, Some(actual), fresh);
            }
            8 => {
                let at = Nanos::new(fresh);
                let joint = all_of(&[&pair.limiter, &other.limiter]).check_n_at(amount, at);
                // The mutex buckets, all or nothing, under the lock of the test.
                let admits = |p: &Pair| {
                    amount <= p.bucket.quota().burst() && p.bucket.available_at(at) >= amount
                };
                let both = admits(&pair) && admits(&other);
                prop_assert_eq!(joint.is_ok(), both, "all_of at {}", step);
                if both && amount > 0 {
                    for p in [&mut pair, &mut other] {
                        prop_assert!(p.bucket.check_n_at(amount, at).is_ok());
                        p.log.push(Carried::Admitted {
                            at: fresh,
                            tokens: amount,
                            wait: 0,
                        });
                    }
                }
            }
            9 => {
                let to = changes[(s.raw % 3) as usize];
                let how = RULES[(s.amount % 6) as usize];
                pair.change(to, how, fresh);
            }
            _ => {}
        }
        pair.level(now, &step)?;
        other.level(fresh, &step)?;
    }
    pair.replay()?;
    other.replay()?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn limiter_and_mutex_bucket_agree_at_every_step(
        quota in quotas(),
        empty in any::<bool>(),
        start in prop_oneof![Just(0u64), 0..=1_000_000_000_000u64],
        steps in steps(100..=300),
    ) {
        run(quota, empty, start, &steps)?;
    }
}

fn step(op: u8, amount: u32, when: u8, raw: u64) -> Step {
    Step {
        op,
        amount,
        when,
        raw,
    }
}

#[test]
fn both_admit_eleven_of_a_burst_150_ms_apart_at_capacity_eight() {
    let mut pair = Pair::new(Quota::per_second(2).with_burst(8), None);
    let mut admitted = 0;
    for i in 0..14 {
        admitted += u32::from(pair.check(1, i * 150_000_000, "burst").unwrap().ok);
    }
    assert_eq!(admitted, 11);
}

#[test]
fn both_answer_a_stale_check_as_of_its_own_time() {
    let mut pair = Pair::new(quota(10, 5), None);
    assert!(pair.check(5, 1_000, "spend").unwrap().ok);
    let stale = pair.check(1, 990, "stale").unwrap();
    assert_eq!(stale.retry_after, Some(Duration::from_nanos(20)));
    assert!(pair.check(1, 1_010, "fresh").unwrap().ok);
    pair.level(0, "far stale").unwrap();
}

#[test]
fn both_give_a_booking_back_to_exactly_full() {
    let mut pair = Pair::new(quota(7, 3), Some(100));
    pair.reserve(2, 14, 100, "book").unwrap();
    pair.settle(0, None, 103);
    pair.level(103, "cancelled").unwrap();
    pair.replay().unwrap();
}

#[test]
fn both_agree_on_explicit_schedules() {
    let schedules = [
        // Drain, wait out the exact retry instant and 1 ns before it, with a stale check between.
        vec![
            step(0, 3, 0, 0),
            step(0, 1, 7, 0),
            step(0, 1, 7, 1),
            step(0, 1, 6, 5),
            step(0, 1, 7, 0),
        ],
        // Start empty, refill by whole tokens, spend above the burst, book, cancel, check.
        vec![
            step(0, 2, 4, 2),
            step(0, 6, 5, 3),
            step(4, 1, 5, 0),
            step(6, 0, 5, 0),
            step(0, 3, 6, 1),
            step(10, 0, 0, 9),
        ],
        // Book ahead, settle above, change the quota, cancel a booking of the old quota.
        vec![
            step(4, 2, 0, 2),
            step(5, 1, 5, 0),
            step(7, 0, 5, 7),
            step(9, 1, 5, 1),
            step(6, 0, 5, 0),
            step(8, 1, 5, 0),
        ],
    ];
    for steps in &schedules {
        for empty in [false, true] {
            run(quota(10, 3), empty, 50, steps).unwrap();
            run(Quota::per_second(3), empty, 0, steps).unwrap();
        }
    }
}

/// The deepest quota, drained: a denied check's need is beyond the depth, still representable.
#[test]
fn both_agree_at_the_deepest_quota() {
    let mut pair = Pair::new(quota(1 << 60, 4), None);
    assert!(pair.check(4, 0, "drain").unwrap().ok);
    pair.check(1, 0, "a need beyond the depth").unwrap();
}

/// Starting empty less than one depth before the end of the clock.
#[test]
fn both_start_empty_near_the_end_of_the_clock() {
    let start = u64::MAX - 20;
    let mut pair = Pair::new(quota(10, 5), Some(start));
    pair.level(start, "empty near the end").unwrap();
    pair.check(1, start, "a check near the end").unwrap();
}
