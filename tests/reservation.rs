//! `Reservation` and `Limiter::reserve`: booking order, refusals that book nothing,
//! cancellation and settlement, tickets, all on exact nanosecond figures (manual time).

use crate::common::{keyed, manual, ms};
use cellrate::{Limiter, ManualClock, Nanos, Quota};
use std::time::Duration;

/// 100 ms: the emission interval of every 10/s quota below.
const T: u64 = 100_000_000;
const LONG: Duration = Duration::from_secs(3600);

/// Ten a second, holding `burst`.
fn ten_per_second(burst: u32) -> Limiter<ManualClock> {
    manual(Quota::per_second(10).with_burst(burst)).0
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
        answers.push(format!("avail {}", limiter.at(now).available()));
        if i % 3 == 2 {
            let booked = limiter.at(now).reserve(cost, Duration::from_millis(250));
            answers.push(format!("{:?}", booked.map(|r| r.ready_at())));
        } else {
            answers.push(format!("{:?}", limiter.at(now).check_n(cost)));
        }
    }
    answers
}

#[test]
fn fifty_reservations_at_one_instant_are_served_one_interval_apart_in_booking_order() {
    for burst in [1u32, 10] {
        let limiter = ten_per_second(burst);
        for k in 0..50u32 {
            let r = limiter.at(Nanos::ZERO).reserve(1, LONG).unwrap();
            // The first `burst` are ready now; each later one exactly T after the one before.
            let slot = u64::from(k.saturating_sub(burst - 1)) * T;
            assert_eq!(r.ready_at(), Nanos::new(slot), "burst {burst}, booking {k}");
            assert_eq!(r.ready_in(), Duration::from_nanos(slot)); // the clock reads 0
            assert_eq!(r.cost(), 1);
            let allowed = r.allowed();
            assert_eq!(
                allowed.reset_after(),
                Duration::from_nanos(u64::from(k + 1) * T)
            );
            assert_eq!(allowed.remaining(), burst.saturating_sub(k + 1));
        }
    }
}

#[test]
fn reserve_reads_the_limiters_clock() {
    let (limiter, clock) = manual(Quota::per_second(10).with_burst(1));
    clock.set(ms(5_000));
    let first = limiter.reserve(1, LONG).unwrap();
    let second = limiter.reserve(1, LONG).unwrap();
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
            let _ = l.at(Nanos::ZERO).reserve(1, LONG).unwrap(); // slots 0..=400 ms
        }
    }
    // The next slot is 500 ms away: 1 ns short of that is refused, with the wait it needs.
    let refused = limiter
        .at(Nanos::ZERO)
        .reserve(1, Duration::from_nanos(5 * T - 1))
        .unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(500)));
    assert_eq!(refused.remaining(), 0);
    assert_eq!(refused.reset_after(), Duration::from_millis(500));
    // Nothing was booked: same level, and the next booking gets the slot the refused one
    // would have had (exactly max_wait away is accepted).
    for now in [0, 250, 499, 500, 600] {
        assert_eq!(
            limiter.at(ms(now)).available(),
            twin.at(ms(now)).available()
        );
    }
    let next = limiter
        .at(Nanos::ZERO)
        .reserve(1, Duration::from_millis(500))
        .unwrap();
    assert_eq!(next.ready_at(), ms(500));
    let _ = twin.at(Nanos::ZERO).reserve(1, LONG).unwrap();
    assert_eq!(follow_up(&limiter, ms(10)), follow_up(&twin, ms(10)));
}

#[test]
fn a_cost_above_the_burst_is_refused_at_once_without_a_retry_time() {
    let limiter = ten_per_second(10);
    let refused = limiter
        .at(Nanos::ZERO)
        .reserve(11, Duration::MAX)
        .unwrap_err();
    assert_eq!(refused.retry_after(), None);
    assert_eq!(refused.remaining(), 10);
    assert_eq!(limiter.at(Nanos::ZERO).available(), 10, "nothing booked");
    // Also while in debt, and whatever the maximum wait.
    let _ = limiter.at(Nanos::ZERO).reserve(10, LONG).unwrap();
    let _ = limiter.at(Nanos::ZERO).reserve(10, LONG).unwrap();
    let refused = limiter.at(Nanos::ZERO).reserve(u32::MAX, LONG).unwrap_err();
    assert_eq!(refused.retry_after(), None);
    assert_eq!(refused.reset_after(), Duration::from_secs(2));
    assert_eq!(
        limiter.at(Nanos::ZERO).reserve(1, LONG).unwrap().ready_at(),
        ms(1_100)
    );
}

#[test]
fn a_zero_cost_reservation_is_ready_now_and_books_nothing() {
    let limiter = ten_per_second(2);
    let twin = ten_per_second(2);
    for l in [&limiter, &twin] {
        for _ in 0..4 {
            let _ = l.at(Nanos::ZERO).reserve(1, LONG).unwrap(); // in debt until 400 ms
        }
    }
    let peek = limiter.at(ms(50)).reserve(0, Duration::ZERO).unwrap();
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
                l.at(Nanos::ZERO).check_n(setup).unwrap();
            }
        }
        let r = limiter.at(ms(booked_at)).reserve(cost, LONG).unwrap();
        let peek = |l: &Limiter<ManualClock>| l.at(ms(booked_at)).check_n(0).unwrap();
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
    let (limiter, clock) = manual(Quota::per_second(10).with_burst(3));
    let r = limiter.reserve(2, LONG).unwrap(); // TAT 200 ms
    limiter.check().unwrap(); // TAT 300 ms: r is no longer on top
    clock.set(ms(50));
    // Given back at 50 ms: r's first 50 ms are refilled already and stay refilled: 150 ms
    // back, TAT 150 ms (at 0 it would have been 200 ms back, TAT 100 ms).
    r.cancel();
    assert_eq!(limiter.at(ms(0)).available(), 1);
    assert_eq!(limiter.available(), 2);
}

#[test]
fn cancel_under_a_waiting_booking_gives_nothing_back_and_its_slot_stands() {
    let limiter = ten_per_second(3);
    let a = limiter.at(Nanos::ZERO).reserve(2, LONG).unwrap(); // ready 0, TAT 200 ms
    let b = limiter.at(Nanos::ZERO).reserve(2, LONG).unwrap(); // ready 100 ms, TAT 400 ms
    assert_eq!(b.ready_at(), ms(100));
    a.cancel_at(Nanos::ZERO);
    assert_eq!(b.ready_at(), ms(100));
    // b waits above a's slot: giving a's tokens back would let a new booking overlap b's. The
    // bucket stays where both bookings left it.
    let twin = ten_per_second(3);
    twin.at(Nanos::ZERO).reserve(2, LONG).unwrap().allowed();
    twin.at(Nanos::ZERO).reserve(2, LONG).unwrap().allowed();
    assert_eq!(limiter.at(Nanos::ZERO).available(), 0);
    assert_eq!(
        follow_up(&limiter, Nanos::ZERO),
        follow_up(&twin, Nanos::ZERO)
    );
    let _ = b.allowed();
}

#[test]
fn cancel_under_a_later_admission_gives_back_what_it_still_holds() {
    let limiter = ten_per_second(5);
    let a = limiter.at(Nanos::ZERO).reserve(2, LONG).unwrap(); // TAT 200 ms
    limiter.at(ms(50)).check_n(2).unwrap(); // used at once: TAT 400 ms
    a.cancel_at(ms(50));
    // a held 150 ms of its 200 at 50 ms: TAT 250 ms, as if only the admission at 50 ms (and
    // the 50 ms a had used) were spent.
    assert_eq!(
        limiter.at(ms(50)).check_n(0).unwrap().reset_after(),
        Duration::from_millis(200)
    );
    assert_eq!(limiter.at(ms(50)).available(), 3);
}

#[test]
fn cancel_never_gives_back_above_the_capacity() {
    let limiter = ten_per_second(3);
    let a = limiter.at(Nanos::ZERO).reserve(3, LONG).unwrap(); // TAT 300 ms
                                                               // Given back at 250 ms: only the last 50 ms were still held, TAT max(250, 250) = full, and
                                                               // not beyond.
    a.cancel_at(ms(250));
    assert_eq!(limiter.at(ms(250)).available(), 3);
    limiter.at(ms(250)).check_n(3).unwrap();
    let denied = limiter.at(ms(250)).check_n(1).unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_millis(100)));
}

/// The documented promise of `cancel_at`: "the cancellation can only leave the limit
/// under-used, never exceeded". The tokens actually used (the spend at 0 and every surviving
/// reservation at its `ready_at`) must be a schedule a fresh limiter admits. Here `a` is
/// cancelled before its time, while `b` is booked behind it.
#[test]
fn a_cancelled_reservation_never_lets_the_used_tokens_exceed_the_limit() {
    let limiter = ten_per_second(1);
    limiter.at(Nanos::ZERO).check_n(1).unwrap(); // used at 0
    let a = limiter.at(Nanos::ZERO).reserve(1, LONG).unwrap(); // slot 100 ms
    let b = limiter.at(Nanos::ZERO).reserve(1, LONG).unwrap(); // slot 200 ms
    a.cancel_at(Nanos::ZERO);
    let c = limiter.at(Nanos::ZERO).reserve(1, LONG).unwrap();
    let used = [Nanos::ZERO, b.ready_at(), c.ready_at()];
    let replay = ten_per_second(1);
    for when in used {
        assert!(
            replay.at(when).check_n(1).is_ok(),
            "tokens used at {used:?} exceed 10/s burst 1"
        );
    }
}

#[test]
fn settle_lower_refunds_the_difference() {
    let limiter = ten_per_second(5);
    let r = limiter.at(Nanos::ZERO).reserve(4, LONG).unwrap();
    r.settle_at(1, ms(50)).unwrap();
    let twin = ten_per_second(5);
    twin.at(Nanos::ZERO).check_n(1).unwrap();
    assert_eq!(limiter.at(ms(50)).available(), 4);
    assert_eq!(follow_up(&limiter, ms(50)), follow_up(&twin, ms(50)));
}

#[test]
fn settle_at_the_booked_cost_changes_nothing() {
    let limiter = ten_per_second(5);
    let twin = ten_per_second(5);
    let r = limiter.at(Nanos::ZERO).reserve(3, LONG).unwrap();
    let _ = twin.at(Nanos::ZERO).reserve(3, LONG).unwrap();
    r.settle_at(3, ms(20)).unwrap();
    assert_eq!(follow_up(&limiter, ms(20)), follow_up(&twin, ms(20)));
}

#[test]
fn settle_higher_forces_the_bucket_into_debt() {
    let limiter = ten_per_second(2);
    let r = limiter.at(Nanos::ZERO).reserve(1, LONG).unwrap(); // TAT 100 ms
    r.settle_at(3, Nanos::ZERO).unwrap(); // 2 more, unconditionally: TAT 300 ms, beyond the depth
    let denied = limiter.at(Nanos::ZERO).check_n(1).unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_millis(200)));
    assert_eq!(denied.remaining(), 0);
    assert_eq!(denied.reset_after(), Duration::from_millis(300));
    let just_before = Nanos::new(2 * T - 1);
    let denied = limiter.at(just_before).check_n(1).unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_nanos(1)));
    let allowed = limiter.at(ms(200)).check_n(1).unwrap();
    assert_eq!(allowed.remaining(), 0);
    assert_eq!(allowed.reset_after(), Duration::from_millis(200));
}

#[test]
fn settle_reads_the_limiters_clock() {
    let (limiter, clock) = manual(Quota::per_second(10).with_burst(2));
    let r = limiter.reserve(2, LONG).unwrap(); // TAT 200 ms
    clock.set(ms(500)); // full again: the extra is spent from a full bucket at 500 ms
    r.settle(3).unwrap();
    assert_eq!(limiter.available(), 1);
    assert_eq!(
        limiter.check_n(2).unwrap_err().retry_after(),
        Some(Duration::from_millis(100))
    );
}

#[test]
fn a_dropped_reservation_keeps_its_booking() {
    let limiter = ten_per_second(3);
    drop(limiter.at(Nanos::ZERO).reserve(2, LONG).unwrap());
    let twin = ten_per_second(3);
    twin.at(Nanos::ZERO).check_n(2).unwrap();
    assert_eq!(limiter.at(Nanos::ZERO).available(), 1);
    assert_eq!(
        follow_up(&limiter, Nanos::ZERO),
        follow_up(&twin, Nanos::ZERO)
    );
}

#[test]
fn commit_returns_the_level_after_the_booking() {
    let limiter = ten_per_second(3);
    let r = limiter.at(Nanos::ZERO).reserve(2, LONG).unwrap();
    let spent = ten_per_second(3).at(Nanos::ZERO).check_n(2).unwrap();
    assert_eq!(r.allowed(), spent);
    assert_eq!(r.allowed(), spent);
}

#[test]
fn a_detached_reservation_is_settled_in_another_thread() {
    let limiter = std::sync::Arc::new(ten_per_second(5));
    let ticket = limiter.at(Nanos::ZERO).reserve(4, LONG).unwrap().detach();
    assert_eq!(limiter.at(Nanos::ZERO).available(), 1);
    let shared = limiter.clone();
    std::thread::spawn(move || shared.attach(ticket).unwrap().settle_at(1, Nanos::ZERO))
        .join()
        .unwrap()
        .unwrap();
    assert_eq!(
        limiter.at(Nanos::ZERO).available(),
        4,
        "3 of the 4 came back"
    );
}

#[test]
fn attach_refuses_a_ticket_of_another_limiter() {
    let limiter = ten_per_second(5);
    let other = ten_per_second(5);
    let ticket = limiter.at(Nanos::ZERO).reserve(2, LONG).unwrap().detach();
    // A ticket is not Copy: a refusal hands it back.
    let ticket = other.attach(ticket).unwrap_err();
    let (keyed, _) = keyed::<u8>(Quota::per_second(10).with_burst(5));
    let ticket = keyed.attach(ticket).unwrap_err();
    limiter.attach(ticket).unwrap().cancel_at(Nanos::ZERO);
    assert_eq!(limiter.at(Nanos::ZERO).available(), 5);
    assert_eq!(other.at(Nanos::ZERO).available(), 5);
}

#[test]
fn a_detached_keyed_reservation_outlives_its_handle() {
    let limiter = std::sync::Arc::new(keyed::<String>(Quota::per_second(10).with_burst(5)).0);
    let ticket = {
        let handle = limiter.key("alice");
        handle.reserve(5, LONG).unwrap().detach()
    };
    let (stranger, _) = keyed::<String>(Quota::per_second(10).with_burst(5));
    let ticket = stranger
        .attach(ticket)
        .expect_err("another limiter's ticket");
    assert_eq!(limiter.key("alice").available(), 0);
    let shared = limiter.clone();
    std::thread::spawn(move || shared.attach(ticket).unwrap().cancel())
        .join()
        .unwrap();
    assert_eq!(limiter.key("alice").available(), 5);
}

#[test]
fn cancel_and_settle_use_the_quota_the_tokens_were_booked_under() {
    let (limiter, _) = keyed::<u8>(Quota::per_second(10).with_burst(10));
    let fast = Quota::per_second(1000).with_burst(10);
    let booked = limiter.key(&1).with_quota(fast).reserve(10, LONG).unwrap();
    // A quota is part of a bucket's identity: under the limiter's quota the key has another
    // bucket, which the booking did not touch, so all 10 of its tokens are there.
    assert_eq!(limiter.key(&1).available(), 10);
    booked.settle(4).unwrap(); // 6 tokens of 1 ms each come back, not 6 of 100 ms
    assert_eq!(limiter.key(&1).with_quota(fast).available(), 6);
    assert_eq!(
        limiter.key(&1).available(),
        10,
        "the other bucket got nothing"
    );
}

/// A reservation's wait (`until_ready`) dropped before it ends gives the tokens back, whether
/// or not it was ever polled.
#[cfg(feature = "async")]
#[test]
fn a_dropped_wait_of_a_reservation_gives_its_tokens_back_polled_or_not() {
    use std::future::Future;
    use std::task::{Context, Waker};
    for poll in [false, true] {
        let limiter = ten_per_second(2);
        limiter.check_n(2).unwrap();
        let booked = limiter.reserve(1, LONG).unwrap(); // ready at 100 ms
        let mut waiting = Box::pin(booked.until_ready());
        if poll {
            let pending = waiting
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()));
            assert!(
                pending.is_pending(),
                "100 ms away on a clock that stands still"
            );
        }
        drop(waiting);
        assert_eq!(
            limiter.check_n(0).unwrap().reset_after(),
            Duration::from_millis(200),
            "polled {poll}: the booking was kept"
        );
    }
}
