//! `Limiter`: the rules of the GCRA decision (`docs/design.md`), one by one, with the figures
//! each outcome reports.

use crate::common::{manual, ms, quota, same_booking};
use cellrate::{
    Allowed, Clock, Denied, Limiter, ManualClock, Nanos, Quota, QuotaChange, TickClock,
};
use std::time::Duration;

/// Small quotas, including intervals that do not divide a second and bursts from 1 up.
fn quota_grid() -> Vec<Quota> {
    vec![
        quota(1, 1),
        quota(1, 7),
        quota(3, 4),
        quota(7, 3),
        quota(10, 5),
        Quota::per_second(3),
        Quota::per_second(7).with_burst(5),
        Quota::per_second(2).with_burst(6),
        Quota::per_minute(7),
        Quota::per_hour(13).with_burst(4),
        quota(999_999_937, 3),
    ]
}

/// A fresh limiter on `quota` with `spent` tokens spent at `when`.
fn spent_at(quota: Quota, spent: u32, when: u64) -> Limiter<ManualClock> {
    let (limiter, _) = manual(quota);
    limiter
        .at(Nanos::new(when))
        .check_n(spent)
        .expect("the setup spend");
    limiter
}

// Static assertion: a limiter can be shared between threads.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Limiter>();
    send_sync::<Limiter<ManualClock>>();
    send_sync::<Allowed>();
    send_sync::<Denied>();
};

#[test]
fn a_new_limiter_starts_full() {
    let l = manual(quota(10, 5)).0;
    assert_eq!(l.available(), 5);
    for left in (0..5).rev() {
        assert_eq!(l.at(Nanos::ZERO).check_n(1).unwrap().remaining(), left);
    }
    assert!(l.at(Nanos::ZERO).check_n(1).is_err());

    // Full whatever the clock reads when it is made.
    let clock = ManualClock::new();
    clock.set(Nanos::new(1 << 40));
    let l = Limiter::with_clock(quota(10, 5), clock);
    assert_eq!(l.available(), 5);
    assert_eq!(l.check_n(5).unwrap().remaining(), 0);
    assert!(l.check().is_err());
}

#[test]
fn limiter_new_reads_the_tick_clock_and_starts_full() {
    let l: Limiter<TickClock> = Limiter::new(Quota::per_hour(3));
    assert_eq!(l.quota(), Quota::per_hour(3));
    assert_eq!(l.check_n(3).unwrap().remaining(), 0);
    assert!(
        l.check().is_err(),
        "an hourly token arrived within the test"
    );
}

#[test]
fn start_empty_holds_no_tokens_and_is_full_one_depth_later() {
    let (l, clock) = manual(quota(10, 5));
    clock.set(Nanos::new(1_000));
    let l = l.start_empty(true);
    assert_eq!(l.at(Nanos::new(1_000)).available(), 0);
    let denied = l.at(Nanos::new(1_000)).check_n(1).unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_nanos(10)));
    assert_eq!(
        (denied.remaining(), denied.reset_after()),
        (0, Duration::from_nanos(50))
    );
    assert_eq!(l.at(Nanos::new(1_009)).available(), 0);
    assert_eq!(l.at(Nanos::new(1_010)).available(), 1);
    assert_eq!(l.at(Nanos::new(1_049)).available(), 4);
    assert_eq!(l.at(Nanos::new(1_050)).available(), 5);
    assert_eq!(l.at(Nanos::new(1_050)).check_n(5).unwrap().remaining(), 0);
}

#[test]
fn start_empty_reads_the_clock() {
    let clock = ManualClock::new();
    clock.set(Nanos::new(7_000));
    let l = Limiter::with_clock(quota(10, 5), clock.clone()).start_empty(true);
    assert_eq!(
        (l.clock().now(), l.quota()),
        (Nanos::new(7_000), quota(10, 5))
    );
    assert_eq!(l.available(), 0);
    assert!(l.check().is_err());
    clock.advance(Duration::from_nanos(49));
    assert_eq!(l.available(), 4);
    clock.advance(Duration::from_nanos(1));
    assert_eq!(l.available(), 5);
}

/// `start_empty(false)`, as on the keyed builder and the Redis options, changes nothing: a
/// full limiter stays full, a spent one keeps its spend.
#[test]
fn start_empty_false_leaves_the_limiter_as_it_is() {
    assert_eq!(
        manual(quota(10, 5))
            .0
            .start_empty(false)
            .at(Nanos::ZERO)
            .available(),
        5
    );
    let spent = manual(quota(10, 5)).0;
    spent.at(Nanos::ZERO).check_n(3).unwrap();
    let kept = spent.start_empty(false);
    assert_eq!(kept.at(Nanos::ZERO).available(), 2);
    let keyed = cellrate::KeyedLimiter::<u64, _>::builder(quota(10, 5))
        .clock(ManualClock::new())
        .start_empty(true)
        .start_empty(false)
        .build();
    assert_eq!(
        keyed
            .at(Nanos::ZERO)
            .key(&1)
            .check_n(5)
            .map(|a| a.remaining()),
        Ok(0)
    );
}

/// Every operation of a limiter has a form at a time passed in (`limiter.at(now)`, and
/// `cancel_at` / `settle_at` of a reservation) that decides exactly as the operation does when
/// the limiter's clock reads that time: one script, on a limiter read from its clock and on its
/// twin given the times.
#[test]
fn every_operation_at_a_time_passed_in_decides_as_on_the_clock() {
    let (q, other) = (Quota::per_second(10).with_burst(5), Quota::per_second(20));
    let (on_clock, clock) = manual(q);
    let (passed_in, _) = manual(q);
    let wait = Duration::from_millis(250);
    for (i, t) in [0, 0, 30, 120, 120, 450, 1_000, 1_020, 1_300, 3_000]
        .into_iter()
        .enumerate()
    {
        let (now, cost) = (ms(t), [1, 2, 3, 0][i % 4]);
        clock.set(now);
        let at = passed_in.at(now);
        assert_eq!(on_clock.check(), at.check(), "check at {t} ms");
        assert_eq!(
            on_clock.check_n(cost),
            at.check_n(cost),
            "check_n at {t} ms"
        );
        assert_eq!(on_clock.available(), at.available(), "available at {t} ms");
        let booked = (on_clock.reserve(cost, wait), at.reserve(cost, wait));
        same_booking(booked, i, now, &format!("reserve at {t} ms"));
        if i == 4 {
            on_clock.set_quota(other, QuotaChange::KeepAvailable);
            at.set_quota(other, QuotaChange::KeepAvailable);
        } else if i == 7 {
            on_clock.set_quota(q, QuotaChange::Proportional);
            at.set_quota(q, QuotaChange::Proportional);
        }
        assert_eq!(on_clock.quota(), passed_in.quota());
        assert_eq!(on_clock.check_n(0), at.check_n(0), "the buckets at {t} ms");
    }
}

#[test]
fn a_peek_reports_the_level_and_spends_nothing() {
    let l = spent_at(quota(10, 5), 2, 0);
    for _ in 0..100 {
        let peek = l.at(Nanos::new(5)).check_n(0).unwrap();
        assert_eq!(
            (peek.remaining(), peek.reset_after()),
            (3, Duration::from_nanos(15))
        );
    }
    assert_eq!(l.at(Nanos::new(5)).available(), 3);
    assert_eq!(l.at(Nanos::new(5)).check_n(3).unwrap().remaining(), 0);
    // Even an empty bucket admits a peek.
    assert_eq!(l.at(Nanos::new(5)).check_n(0).unwrap().remaining(), 0);
}

#[test]
fn a_peek_at_a_stale_time_stores_nothing() {
    let l = spent_at(quota(10, 5), 3, 1_000);
    let peek = l.at(Nanos::ZERO).check_n(0).unwrap();
    assert_eq!(
        (peek.remaining(), peek.reset_after()),
        (0, Duration::from_nanos(1_030))
    );
    assert_eq!(l.at(Nanos::new(1_000)).available(), 2);
    assert_eq!(l.at(Nanos::new(1_000)).check_n(2).unwrap().remaining(), 0);

    // A peek at a late time must not move the TAT up to that time either: an earlier check
    // still finds the bucket full.
    let l = manual(quota(10, 5)).0;
    assert_eq!(
        l.at(Nanos::new(1_000_000)).check_n(0).unwrap().remaining(),
        5
    );
    assert_eq!(l.at(Nanos::ZERO).available(), 5);
    assert_eq!(l.at(Nanos::ZERO).check_n(5).unwrap().remaining(), 0);
}

#[test]
fn a_cost_above_the_burst_never_passes_and_spends_nothing() {
    let l = spent_at(quota(10, 5), 1, 0);
    for cost in [6, 7, 1_000, u32::MAX] {
        let denied = l.at(Nanos::ZERO).check_n(cost).unwrap_err();
        assert_eq!(denied.retry_after(), None, "cost {cost}");
        assert_eq!(
            (denied.remaining(), denied.reset_after()),
            (4, Duration::from_nanos(10))
        );
    }
    assert_eq!(l.at(Nanos::ZERO).available(), 4);
    assert_eq!(l.at(Nanos::ZERO).check_n(4).unwrap().remaining(), 0);
    let full_later = l.at(Nanos::new(1 << 40)).check_n(6).unwrap_err();
    assert_eq!(full_later.retry_after(), None);
    assert_eq!(full_later.remaining(), 5);
}

/// Over the grid: after `spent` tokens at 0, every denied `cost` at `now` reports
/// `retry_after = (max(TAT, now) - now + cost*T) - D`, is denied 1 ns before `now + retry_after`
/// and passes at exactly `now + retry_after`, filling the bucket to the brim.
#[test]
fn retry_after_is_exact_to_the_nanosecond() {
    for q in quota_grid() {
        let (t, b, d) = (
            q.emission_interval().as_nanos() as u64,
            q.burst(),
            q.replenish_all().as_nanos() as u64,
        );
        let mut denials = 0;
        for spent in 0..=b {
            let tat = u64::from(spent) * t;
            for now in [0, 1, t / 2, t - 1, t, t + 1, 2 * t + t / 3] {
                for cost in 1..=b {
                    let l = spent_at(q, spent, 0);
                    let Err(denied) = l.at(Nanos::new(now)).check_n(cost) else {
                        continue;
                    };
                    denials += 1;
                    let need = tat.saturating_sub(now) + u64::from(cost) * t;
                    let wait = denied.retry_after().unwrap().as_nanos() as u64;
                    let case = format!("{q:?} spent {spent} now {now} cost {cost}");
                    assert_eq!(wait, need - d, "{case}");
                    assert!(
                        l.at(Nanos::new(now + wait - 1)).check_n(cost).is_err(),
                        "{case}: early"
                    );
                    let allowed = l.at(Nanos::new(now + wait)).check_n(cost).expect(&case);
                    assert_eq!(allowed.remaining(), 0, "{case}");
                    assert_eq!(allowed.reset_after(), Duration::from_nanos(d), "{case}");
                }
            }
        }
        assert!(denials > 0, "{q:?}: the grid denied nothing");
    }
}

/// After spending at `late`, nothing checked at an earlier `stale` time does better than at
/// `late`: no more tokens, no admission that `late` would refuse, no earlier retry instant.
#[test]
fn a_stale_now_never_grants_more() {
    for q in quota_grid() {
        let (t, b) = (q.emission_interval().as_nanos() as u64, q.burst());
        let late = 5 * t + 3;
        let cases = (1..=b).flat_map(|spent| {
            let stale = [0, 1, t, 5 * t, late - 1];
            stale
                .into_iter()
                .flat_map(move |stale| (1..=b).map(move |cost| (spent, stale, cost)))
        });
        for (spent, stale, cost) in cases {
            let case = format!("{q:?} spent {spent} stale {stale} cost {cost}");
            let (old, new) = (spent_at(q, spent, late), spent_at(q, spent, late));
            assert!(
                old.at(Nanos::new(stale)).available() <= old.at(Nanos::new(late)).available(),
                "{case}"
            );
            match (
                old.at(Nanos::new(stale)).check_n(cost),
                new.at(Nanos::new(late)).check_n(cost),
            ) {
                (Ok(_), Err(_)) => panic!("{case}: admitted only at the stale time"),
                (Ok(_), Ok(_)) => assert!(
                    old.at(Nanos::new(late)).available() <= new.at(Nanos::new(late)).available(),
                    "{case}: a stale spend cost less"
                ),
                (Err(o), Err(n)) => assert_eq!(
                    stale + o.retry_after().unwrap().as_nanos() as u64,
                    late + n.retry_after().unwrap().as_nanos() as u64,
                    "{case}: the retry instants differ"
                ),
                (Err(_), Ok(_)) => {}
            }
        }
    }
}

#[test]
fn a_cancelled_booking_gives_back_what_it_still_holds() {
    let l = manual(quota(10, 5)).0;
    let booked = l.at(Nanos::ZERO).reserve(3, Duration::ZERO).unwrap();
    booked.cancel_at(Nanos::ZERO);
    assert_eq!(
        l.at(Nanos::ZERO).available(),
        5,
        "nothing came between: all of it back"
    );
    // Spent at 0, given back at 15: the 15 ns already refilled do not come back twice.
    let booked = l.at(Nanos::ZERO).reserve(5, Duration::ZERO).unwrap();
    booked.cancel_at(Nanos::new(15));
    assert_eq!(
        l.at(Nanos::new(15)).check_n(0).unwrap().reset_after(),
        Duration::from_nanos(0)
    );
    assert_eq!(l.at(Nanos::new(15)).available(), 5);
    assert!(l.at(Nanos::new(15)).check_n(5).is_ok());
    assert!(
        l.at(Nanos::new(15)).check_n(1).is_err(),
        "the give-back banked tokens"
    );
}

#[test]
fn a_booking_given_back_into_a_full_bucket_banks_nothing() {
    for when in [0, 1_000_000] {
        let l = manual(quota(10, 5)).0;
        let booked = l.at(Nanos::new(when)).reserve(3, Duration::ZERO).unwrap();
        booked.cancel_at(Nanos::new(when + 100)); // full again since `when + 30`
        assert_eq!(
            l.at(Nanos::new(when + 100)).check_n(5).unwrap().remaining(),
            0
        );
        assert!(
            l.at(Nanos::new(when + 100)).check_n(1).is_err(),
            "the give-back banked tokens"
        );
    }
}

#[test]
fn available_counts_whole_tokens() {
    let (l, clock) = manual(quota(10, 5));
    l.check_n(5).unwrap();
    for (now, expect) in [
        (0, 0),
        (9, 0),
        (10, 1),
        (19, 1),
        (20, 2),
        (49, 4),
        (50, 5),
        (500, 5),
    ] {
        assert_eq!(l.at(Nanos::new(now)).available(), expect, "at {now}");
        clock.set(Nanos::new(now));
        assert_eq!(l.available(), expect, "clock at {now}");
    }
}

#[test]
fn outcomes_report_remaining_and_reset_after() {
    let (l, clock) = manual(Quota::per_second(2).with_burst(6));
    let ms = Duration::from_millis;
    let a = l.check().unwrap();
    assert_eq!((a.remaining(), a.reset_after()), (5, ms(500)));
    let a = l.check_n(3).unwrap();
    assert_eq!((a.remaining(), a.reset_after()), (2, ms(2_000)));
    clock.advance(ms(250));
    let a = l.check_n(2).unwrap();
    assert_eq!((a.remaining(), a.reset_after()), (0, ms(2_750)));
    let d = l.check_n(2).unwrap_err();
    assert_eq!(
        (d.remaining(), d.reset_after(), d.retry_after()),
        (0, ms(2_750), Some(ms(750)))
    );
    clock.advance(ms(500));
    let d = l.check_n(2).unwrap_err();
    assert_eq!(
        (d.remaining(), d.reset_after(), d.retry_after()),
        (1, ms(2_250), Some(ms(250)))
    );
}

#[test]
fn outcomes_format_for_people() {
    let l = spent_at(Quota::per_second(2).with_burst(6), 6, 0);
    let denied = l.at(Nanos::ZERO).check_n(1).unwrap_err();
    assert_eq!(denied.to_string(), "rate limited: retry after 500ms");
    let never = l.at(Nanos::ZERO).check_n(7).unwrap_err();
    assert_eq!(
        never.to_string(),
        "rate limited: the request can never pass (cost above burst)"
    );
    let error: Box<dyn std::error::Error> = Box::new(denied);
    assert!(error.to_string().contains("500ms"));
    let allowed = manual(quota(10, 5)).0.at(Nanos::ZERO).check_n(2).unwrap();
    assert_eq!(
        format!("{allowed:?}"),
        "Allowed { remaining: 3, reset_after: 20ns }"
    );
    assert_eq!(
        format!("{denied:?}"),
        "Denied { retry_after: Some(500ms), remaining: 0, reset_after: 3s }"
    );
}
