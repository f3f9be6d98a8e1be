//! `Reservation` and `Limiter::reserve_n(_at)`: booking order, refusals that book nothing,
//! cancellation and settlement, all on exact nanosecond figures (manual time).

use cellrate::{Limiter, ManualClock, Nanos, Quota};
use std::time::Duration;

/// 100 ms: the emission interval of every 10/s quota below.
const T: u64 = 100_000_000;
const LONG: Duration = Duration::from_secs(3600);

fn ms(n: u64) -> Nanos {
    Nanos::new(n * 1_000_000)
}

fn ten_per_second(burst: u32) -> Limiter<ManualClock> {
    Limiter::with_clock(Quota::per_second(10).with_burst(burst), ManualClock::new())
}

/// A fixed mix of checks, reservations and peeks from `start` on. Two limiters in the same
/// state give the same answers; the answers include denials and waits, so a difference in
/// state shows up.
fn follow_up(limiter: &Limiter<ManualClock>, start: Nanos) -> Vec<String> {
    let mut answers = Vec::new();
    for (i, offset) in [
        0, 0, 30, 100, 100, 150, 220, 300, 310, 450, 700, 1000, 1000, 2500,
    ]
    .into_iter()
    .enumerate()
    {
        let now = Nanos::new(start.as_u64() + offset * 1_000_000);
        let cost = [1, 2, 1, 3][i % 4];
        answers.push(format!("avail {}", limiter.available_at(now)));
        if i % 3 == 2 {
            let booked = limiter.reserve_n_at(cost, Duration::from_millis(250), now);
            answers.push(format!("{:?}", booked.map(|r| r.ready_at())));
        } else {
            answers.push(format!("{:?}", limiter.check_n_at(cost, now)));
        }
    }
    answers
}

#[test]
fn fifty_reservations_at_one_instant_are_served_one_interval_apart_in_booking_order() {
    for burst in [1u32, 10] {
        let limiter = ten_per_second(burst);
        for k in 0..50u32 {
            let r = limiter.reserve_n_at(1, LONG, Nanos::ZERO).unwrap();
            // The first `burst` are ready now; each later one exactly T after the one before.
            let slot = u64::from(k.saturating_sub(burst - 1)) * T;
            assert_eq!(r.ready_at(), Nanos::new(slot), "burst {burst}, booking {k}");
            assert_eq!(r.ready_in_at(Nanos::ZERO), Duration::from_nanos(slot));
            assert_eq!(r.cost(), 1);
            let allowed = r.commit();
            assert_eq!(
                allowed.reset_after(),
                Duration::from_nanos(u64::from(k + 1) * T)
            );
            assert_eq!(allowed.remaining(), burst.saturating_sub(k + 1));
        }
    }
}

#[test]
fn reserve_n_reads_the_limiters_clock() {
    let clock = ManualClock::new();
    let limiter = Limiter::with_clock(Quota::per_second(10).with_burst(1), clock.clone());
    clock.set(ms(5_000));
    let first = limiter.reserve_n(1, LONG).unwrap();
    let second = limiter.reserve_n(1, LONG).unwrap();
    assert_eq!(first.ready_at(), ms(5_000));
    assert_eq!(second.ready_at(), ms(5_100));
    assert_eq!(second.ready_in(), Duration::from_millis(100));
    clock.advance(Duration::from_millis(40));
    assert_eq!(second.ready_in(), Duration::from_millis(60));
    clock.advance(Duration::from_millis(500));
    assert_eq!(
        second.ready_in(),
        Duration::ZERO,
        "a past ready_at waits no time"
    );
}

#[test]
fn a_reservation_waiting_longer_than_max_wait_is_refused_and_books_nothing() {
    let limiter = ten_per_second(1);
    let twin = ten_per_second(1);
    for l in [&limiter, &twin] {
        for _ in 0..5 {
            let _ = l.reserve_n_at(1, LONG, Nanos::ZERO).unwrap(); // slots 0..=400 ms
        }
    }
    // The next slot is 500 ms away: 1 ns short of that is refused, with the wait it needs.
    let refused = limiter
        .reserve_n_at(1, Duration::from_nanos(5 * T - 1), Nanos::ZERO)
        .unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(500)));
    assert_eq!(refused.remaining(), 0);
    assert_eq!(refused.reset_after(), Duration::from_millis(500));
    // Nothing was booked: same level, and the next booking gets the slot the refused one
    // would have had (exactly max_wait away is accepted).
    for now in [0, 250, 499, 500, 600] {
        assert_eq!(limiter.available_at(ms(now)), twin.available_at(ms(now)));
    }
    let next = limiter
        .reserve_n_at(1, Duration::from_millis(500), Nanos::ZERO)
        .unwrap();
    assert_eq!(next.ready_at(), ms(500));
    let _ = twin.reserve_n_at(1, LONG, Nanos::ZERO).unwrap();
    assert_eq!(follow_up(&limiter, ms(10)), follow_up(&twin, ms(10)));
}

#[test]
fn a_cost_above_the_burst_is_refused_at_once_without_a_retry_time() {
    let limiter = ten_per_second(10);
    let refused = limiter
        .reserve_n_at(11, Duration::MAX, Nanos::ZERO)
        .unwrap_err();
    assert_eq!(refused.retry_after(), None);
    assert_eq!(refused.remaining(), 10);
    assert_eq!(limiter.available_at(Nanos::ZERO), 10, "nothing booked");
    // Also while in debt, and whatever the maximum wait.
    let _ = limiter.reserve_n_at(10, LONG, Nanos::ZERO).unwrap();
    let _ = limiter.reserve_n_at(10, LONG, Nanos::ZERO).unwrap();
    let refused = limiter
        .reserve_n_at(u32::MAX, LONG, Nanos::ZERO)
        .unwrap_err();
    assert_eq!(refused.retry_after(), None);
    assert_eq!(refused.reset_after(), Duration::from_secs(2));
    assert_eq!(
        limiter
            .reserve_n_at(1, LONG, Nanos::ZERO)
            .unwrap()
            .ready_at(),
        ms(1_100)
    );
}

#[test]
fn a_zero_cost_reservation_is_ready_now_and_books_nothing() {
    let limiter = ten_per_second(2);
    let twin = ten_per_second(2);
    for l in [&limiter, &twin] {
        for _ in 0..4 {
            let _ = l.reserve_n_at(1, LONG, Nanos::ZERO).unwrap(); // in debt until 400 ms
        }
    }
    let peek = limiter.reserve_n_at(0, Duration::ZERO, ms(50)).unwrap();
    assert_eq!(peek.ready_at(), ms(50));
    assert_eq!(peek.cost(), 0);
    assert_eq!(peek.allowed().reset_after(), Duration::from_millis(350));
    assert_eq!(peek.allowed().remaining(), 0);
    peek.cancel_at(ms(50)); // giving back nothing changes nothing
    assert_eq!(follow_up(&limiter, ms(60)), follow_up(&twin, ms(60)));
}

#[test]
fn cancel_with_no_later_booking_restores_the_bucket_exactly() {
    // (setup spends at 0, cost, booked at, cancelled at): fresh, mid-level, in debt, stale.
    let cases = [
        (0, 3, 0, 0),
        (2, 4, 30, 30),
        (5, 5, 10, 120),
        (4, 3, 700, 900),
    ];
    for (setup, cost, booked_at, cancelled_at) in cases {
        let limiter = ten_per_second(5);
        let twin = ten_per_second(5);
        for l in [&limiter, &twin] {
            if setup > 0 {
                l.check_n_at(setup, Nanos::ZERO).unwrap();
            }
        }
        let r = limiter.reserve_n_at(cost, LONG, ms(booked_at)).unwrap();
        let peek = |l: &Limiter<ManualClock>| l.check_n_at(0, ms(booked_at)).unwrap();
        assert!(
            peek(&limiter).reset_after() > peek(&twin).reset_after(),
            "booked"
        );
        r.cancel_at(ms(cancelled_at));
        let case = (setup, cost, booked_at, cancelled_at);
        assert_eq!(
            follow_up(&limiter, ms(cancelled_at)),
            follow_up(&twin, ms(cancelled_at)),
            "case {case:?}"
        );
    }
}

#[test]
fn cancel_reads_the_limiters_clock() {
    let clock = ManualClock::new();
    let limiter = Limiter::with_clock(Quota::per_second(10).with_burst(3), clock.clone());
    let r = limiter.reserve_n(2, LONG).unwrap(); // TAT 200 ms
    limiter.check().unwrap(); // TAT 300 ms: r is no longer on top
    clock.set(ms(50));
    // Given back at 50 ms: r's first 50 ms are refilled already and stay refilled: 150 ms
    // back, TAT 150 ms (at 0 it would have been 200 ms back, TAT 100 ms).
    r.cancel();
    assert_eq!(limiter.available_at(ms(0)), 1);
    assert_eq!(limiter.available(), 2);
}

#[test]
fn cancel_under_a_waiting_booking_gives_nothing_back_and_its_slot_stands() {
    let limiter = ten_per_second(3);
    let a = limiter.reserve_n_at(2, LONG, Nanos::ZERO).unwrap(); // ready 0, TAT 200 ms
    let b = limiter.reserve_n_at(2, LONG, Nanos::ZERO).unwrap(); // ready 100 ms, TAT 400 ms
    assert_eq!(b.ready_at(), ms(100));
    a.cancel_at(Nanos::ZERO);
    assert_eq!(b.ready_at(), ms(100));
    // b waits above a's slot: giving a's tokens back would let a new booking overlap b's. The
    // bucket stays where both bookings left it.
    let twin = ten_per_second(3);
    twin.reserve_n_at(2, LONG, Nanos::ZERO).unwrap().commit();
    twin.reserve_n_at(2, LONG, Nanos::ZERO).unwrap().commit();
    assert_eq!(limiter.available_at(Nanos::ZERO), 0);
    assert_eq!(
        follow_up(&limiter, Nanos::ZERO),
        follow_up(&twin, Nanos::ZERO)
    );
    let _ = b.commit();
}

#[test]
fn cancel_under_a_later_admission_gives_back_what_it_still_holds() {
    let limiter = ten_per_second(5);
    let a = limiter.reserve_n_at(2, LONG, Nanos::ZERO).unwrap(); // TAT 200 ms
    limiter.check_n_at(2, ms(50)).unwrap(); // used at once: TAT 400 ms
    a.cancel_at(ms(50));
    // a held 150 ms of its 200 at 50 ms: TAT 250 ms, as if only the admission at 50 ms (and
    // the 50 ms a had used) were spent.
    assert_eq!(
        limiter.check_n_at(0, ms(50)).unwrap().reset_after(),
        Duration::from_millis(200)
    );
    assert_eq!(limiter.available_at(ms(50)), 3);
}

#[test]
fn cancel_never_gives_back_above_the_capacity() {
    let limiter = ten_per_second(3);
    let a = limiter.reserve_n_at(3, LONG, Nanos::ZERO).unwrap(); // TAT 300 ms
                                                                 // Given back at 250 ms: only the last 50 ms were still held, TAT max(250, 250) = full, and
                                                                 // not beyond.
    a.cancel_at(ms(250));
    assert_eq!(limiter.available_at(ms(250)), 3);
    limiter.check_n_at(3, ms(250)).unwrap();
    let denied = limiter.check_n_at(1, ms(250)).unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_millis(100)));
}

/// The documented promise of `cancel_at`: "the cancellation can only leave the limit
/// under-used, never exceeded". The tokens actually used (the spend at 0 and every surviving
/// reservation at its `ready_at`) must be a schedule a fresh limiter admits. Here `a` is
/// cancelled before its time, while `b` is booked behind it.
#[test]
fn a_cancelled_reservation_never_lets_the_used_tokens_exceed_the_limit() {
    let limiter = ten_per_second(1);
    limiter.check_n_at(1, Nanos::ZERO).unwrap(); // used at 0
    let a = limiter.reserve_n_at(1, LONG, Nanos::ZERO).unwrap(); // slot 100 ms
    let b = limiter.reserve_n_at(1, LONG, Nanos::ZERO).unwrap(); // slot 200 ms
    a.cancel_at(Nanos::ZERO);
    let c = limiter.reserve_n_at(1, LONG, Nanos::ZERO).unwrap();
    let used = [Nanos::ZERO, b.ready_at(), c.ready_at()];
    let replay = ten_per_second(1);
    for when in used {
        assert!(
            replay.check_n_at(1, when).is_ok(),
            "tokens used at {used:?} exceed 10/s burst 1"
        );
    }
}

#[test]
fn settle_lower_refunds_the_difference() {
    let limiter = ten_per_second(5);
    let r = limiter.reserve_n_at(4, LONG, Nanos::ZERO).unwrap();
    r.settle_at(1, ms(50));
    let twin = ten_per_second(5);
    twin.check_n_at(1, Nanos::ZERO).unwrap();
    assert_eq!(limiter.available_at(ms(50)), 4);
    assert_eq!(follow_up(&limiter, ms(50)), follow_up(&twin, ms(50)));
}

#[test]
fn settle_at_the_booked_cost_changes_nothing() {
    let limiter = ten_per_second(5);
    let twin = ten_per_second(5);
    let r = limiter.reserve_n_at(3, LONG, Nanos::ZERO).unwrap();
    let _ = twin.reserve_n_at(3, LONG, Nanos::ZERO).unwrap();
    r.settle_at(3, ms(20));
    assert_eq!(follow_up(&limiter, ms(20)), follow_up(&twin, ms(20)));
}

#[test]
fn settle_higher_forces_the_bucket_into_debt() {
    let limiter = ten_per_second(2);
    let r = limiter.reserve_n_at(1, LONG, Nanos::ZERO).unwrap(); // TAT 100 ms
    r.settle_at(3, Nanos::ZERO); // 2 more, unconditionally: TAT 300 ms, beyond the depth
    let denied = limiter.check_n_at(1, Nanos::ZERO).unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_millis(200)));
    assert_eq!(denied.remaining(), 0);
    assert_eq!(denied.reset_after(), Duration::from_millis(300));
    let just_before = Nanos::new(2 * T - 1);
    let denied = limiter.check_n_at(1, just_before).unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_nanos(1)));
    let allowed = limiter.check_n_at(1, ms(200)).unwrap();
    assert_eq!(allowed.remaining(), 0);
    assert_eq!(allowed.reset_after(), Duration::from_millis(200));
}

#[test]
fn settle_reads_the_limiters_clock() {
    let clock = ManualClock::new();
    let limiter = Limiter::with_clock(Quota::per_second(10).with_burst(2), clock.clone());
    let r = limiter.reserve_n(2, LONG).unwrap(); // TAT 200 ms
    clock.set(ms(500)); // full again: the extra is spent from a full bucket at 500 ms
    r.settle(3);
    assert_eq!(limiter.available(), 1);
    assert_eq!(
        limiter.check_n(2).unwrap_err().retry_after(),
        Some(Duration::from_millis(100))
    );
}

#[test]
fn a_dropped_reservation_keeps_its_booking() {
    let limiter = ten_per_second(3);
    drop(limiter.reserve_n_at(2, LONG, Nanos::ZERO).unwrap());
    let twin = ten_per_second(3);
    twin.check_n_at(2, Nanos::ZERO).unwrap();
    assert_eq!(limiter.available_at(Nanos::ZERO), 1);
    assert_eq!(
        follow_up(&limiter, Nanos::ZERO),
        follow_up(&twin, Nanos::ZERO)
    );
}

#[test]
fn commit_returns_the_level_after_the_booking() {
    let limiter = ten_per_second(3);
    let r = limiter.reserve_n_at(2, LONG, Nanos::ZERO).unwrap();
    let spent = ten_per_second(3).check_n_at(2, Nanos::ZERO).unwrap();
    assert_eq!(r.allowed(), spent);
    assert_eq!(r.commit(), spent);
}

#[test]
fn a_detached_reservation_is_settled_in_another_thread() {
    let limiter = std::sync::Arc::new(ten_per_second(5));
    let ticket = limiter.reserve_n_at(4, LONG, Nanos::ZERO).unwrap().detach();
    assert_eq!(limiter.available_at(Nanos::ZERO), 1);
    let shared = limiter.clone();
    std::thread::spawn(move || shared.attach(ticket).unwrap().settle_at(1, Nanos::ZERO))
        .join()
        .unwrap();
    assert_eq!(limiter.available_at(Nanos::ZERO), 4, "3 of the 4 came back");
}

#[test]
fn attach_refuses_a_ticket_of_another_limiter() {
    let limiter = ten_per_second(5);
    let other = ten_per_second(5);
    let ticket = limiter.reserve_n_at(2, LONG, Nanos::ZERO).unwrap().detach();
    assert!(other.attach(ticket).is_none());
    let keyed = cellrate::KeyedLimiter::<u8, _>::with_clock(
        Quota::per_second(10).with_burst(5),
        ManualClock::new(),
    );
    assert!(keyed.attach(ticket).is_none());
    limiter.attach(ticket).unwrap().cancel_at(Nanos::ZERO);
    assert_eq!(limiter.available_at(Nanos::ZERO), 5);
    assert_eq!(other.available_at(Nanos::ZERO), 5);
}

#[test]
fn a_detached_keyed_reservation_outlives_its_handle() {
    let limiter = std::sync::Arc::new(cellrate::KeyedLimiter::<String, _>::with_clock(
        Quota::per_second(10).with_burst(5),
        ManualClock::new(),
    ));
    let ticket = {
        let handle = limiter.key("alice");
        handle.reserve_n(5, LONG).unwrap().detach()
    };
    let stranger = cellrate::KeyedLimiter::<String, _>::with_clock(
        Quota::per_second(10).with_burst(5),
        ManualClock::new(),
    );
    assert!(
        stranger.attach(ticket).is_none(),
        "another limiter's ticket"
    );
    assert_eq!(limiter.key("alice").available(), 0);
    let shared = limiter.clone();
    std::thread::spawn(move || shared.attach(ticket).unwrap().cancel())
        .join()
        .unwrap();
    assert_eq!(limiter.key("alice").available(), 5);
}

#[test]
fn cancel_and_settle_use_the_quota_the_tokens_were_booked_under() {
    let limiter = cellrate::KeyedLimiter::<u8, _>::with_clock(
        Quota::per_second(10).with_burst(10),
        ManualClock::new(),
    );
    let fast = Quota::per_second(1000).with_burst(10);
    let booked = limiter
        .key(&1)
        .with_quota(&fast)
        .reserve_n(10, LONG)
        .unwrap();
    // Checked under the default quota meanwhile: 10 ms of debt is 0.1 of its tokens.
    assert_eq!(limiter.key(&1).available(), 9);
    booked.settle(4); // 6 tokens of 1 ms each come back, not 6 of 100 ms
    assert_eq!(limiter.key(&1).with_quota(&fast).available(), 6);
}
