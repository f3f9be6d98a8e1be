//! The default clock (`Limiter::new`, `KeyedLimiter::new`: `TickClock`) as a new user meets
//! it: checks mixed with waits, reservations and give-backs, on quotas deep enough for its
//! cached reading. Every operation on a bucket reads the same time, so none of them loses a
//! token to another's reading; and waits end neither before the limiter's own time says ready
//! nor, in real time, before the tokens are due. The waiting cases are governor's own tests
//! (`tests/future.rs`) and Go's `x/time/rate` (`TestWaitCancel`, `TestWaitTimeout`), translated.

use crate::common::{decision_time, returns_at_once, slept, until_judged};
use cellrate::{Allowed, Clock, Denied, KeyedLimiter, Limiter, Nanos, Quota, TickClock};
use futures::executor::block_on;
use std::future::Future;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Each case runs this often on fresh limiters: a reading taken another way than the checks'
/// lost a token in every run of them, so a few runs suffice.
const RUNS: usize = 20;

#[test]
fn a_wait_leaves_the_tokens_it_did_not_take() {
    let quota = Quota::per_second(10).with_burst(3);
    for _ in 0..RUNS {
        let limiter = Limiter::new(quota);
        let reading = || decision_time(limiter.clock(), &quota);
        let before = reading();
        limiter.wait(2, Duration::from_secs(1)).unwrap();
        let waited = (before, reading());
        let (from, available, to) = (reading(), limiter.available(), reading());
        // 1 left, and what refilled since if this thread was kept off the cores that long.
        if let Some(refilled) = refilled(quota.emission_interval(), waited, (from, to)) {
            let left = u64::from(available);
            assert_eq!(left, (1 + refilled).min(3), "a token lost after a wait");
        }
        assert!(limiter.check().is_ok());
    }
}

#[test]
fn a_reservation_leaves_the_tokens_it_did_not_book() {
    for _ in 0..RUNS {
        let limiter = Limiter::new(Quota::per_second(100).with_burst(10));
        limiter.reserve(4, Duration::ZERO).unwrap().allowed();
        let mut admitted = 0;
        while limiter.check().is_ok() {
            admitted += 1;
        }
        assert!(admitted >= 6, "{admitted} admitted after booking 4 of 10");
    }
}

#[test]
fn a_check_taken_back_can_be_spent_again() {
    for _ in 0..RUNS {
        let limiter = Limiter::new(Quota::per_second(10).with_burst(1));
        let booked = limiter.reserve(1, Duration::ZERO).unwrap();
        booked.cancel(); // the request was not carried out after all
        assert!(
            limiter.check().is_ok(),
            "the token given back cannot be spent"
        );
    }
}

#[test]
fn a_keyed_check_taken_back_can_be_spent_again() {
    let quota = Quota::per_second(10).with_burst(1);
    let limiter = KeyedLimiter::<u32>::new(quota);
    let reading = || decision_time(limiter.clock(), &quota);
    for key in 0..(RUNS as u32 * 10) {
        let booked = limiter.key(&key).reserve(1, Duration::ZERO).unwrap();
        booked.cancel();
        let before = reading();
        assert!(limiter.check_key(&key).is_ok(), "key {key}: a token lost");
        let again = limiter.check_key(&key);
        // Refused, unless this thread was kept off the cores until the token came back.
        if reading().saturating_duration_since(before) < quota.emission_interval() {
            assert!(again.is_err(), "key {key}: a token made up");
        }
    }
}

#[test]
fn a_keyed_booking_leaves_the_rest_to_the_checks() {
    let limiter = KeyedLimiter::<u32>::new(Quota::per_second(100).with_burst(10));
    for key in 0..RUNS as u32 {
        limiter
            .key(&key)
            .reserve(4, Duration::ZERO)
            .unwrap()
            .allowed();
        let admitted = (0..10)
            .take_while(|_| limiter.check_key(&key).is_ok())
            .count();
        assert!(
            admitted >= 6,
            "key {key}: {admitted} admitted after booking 4 of 10"
        );
    }
}

/// Polls `wait` once: whether it was ready then, with no timer set.
fn ready_at_first_poll<F: Future<Output = Result<Allowed, Denied>>>(wait: F) -> bool {
    let mut wait = Box::pin(wait);
    let mut cx = Context::from_waker(Waker::noop());
    matches!(wait.as_mut().poll(&mut cx), Poll::Ready(Ok(_)))
}

/// How long passed, in the limiter's own time, from `before` (a [`decision_time`] taken before
/// the operations) to the clock's exact time now: what a wait's end is held to. A refresher or
/// a thread kept off the cores can lengthen it, never shorten it.
fn since(clock: &TickClock, before: Nanos) -> Duration {
    clock.now().saturating_duration_since(before)
}

// governor's `pauses`: exhausted, the next token is an interval away.
#[test]
fn governor_pauses() {
    let quota = Quota::per_second(10);
    let limiter = Limiter::new(quota);
    let before = decision_time(limiter.clock(), &quota);
    while limiter.check().is_ok() {}
    block_on(limiter.until_ready(1, Duration::MAX)).unwrap();
    let waited = since(limiter.clock(), before);
    assert!(waited >= Duration::from_millis(100), "{waited:?}");
}

// governor's `pauses_n`: 6 of 10 spent, 5 more need one more interval.
#[test]
fn governor_pauses_n() {
    let quota = Quota::per_second(10);
    let limiter = Limiter::new(quota);
    let before = decision_time(limiter.clock(), &quota);
    for _ in 0..6 {
        limiter.check().unwrap();
    }
    block_on(limiter.until_ready(5, Duration::from_secs(1))).unwrap();
    let waited = since(limiter.clock(), before);
    assert!(waited >= Duration::from_millis(100), "{waited:?}");
}

// governor's `pauses_keyed`, timed from before the limiter is made, as governor does.
#[test]
fn governor_pauses_keyed() {
    let quota = Quota::per_second(10);
    let before = decision_time(&TickClock::new(), &quota);
    let limiter = KeyedLimiter::<u32>::new(quota);
    while limiter.check_key(&1).is_ok() {}
    block_on(limiter.key(&1).until_ready(1, Duration::MAX)).unwrap();
    let waited = since(limiter.clock(), before);
    assert!(waited >= Duration::from_millis(100), "{waited:?}");
}

// The keyed form of `pauses_n`.
#[test]
fn governor_pauses_keyed_n() {
    let quota = Quota::per_second(10);
    let limiter = KeyedLimiter::<u32>::new(quota);
    let before = decision_time(limiter.clock(), &quota);
    for _ in 0..6 {
        limiter.check_key(&1).unwrap();
    }
    block_on(limiter.key(&1).until_ready(5, Duration::from_secs(1))).unwrap();
    let waited = since(limiter.clock(), before);
    assert!(waited >= Duration::from_millis(100), "{waited:?}");
}

// governor's `proceeds` and `proceeds_n`: tokens that are there are not waited for.
#[test]
fn governor_proceeds() {
    for limiter in [
        Limiter::new(Quota::per_second(2)),
        Limiter::new(Quota::per_second(3)),
    ] {
        // Ready at the first poll: no timer was set, whatever else the machine runs.
        assert!(ready_at_first_poll(
            limiter.until_ready(2, Duration::from_secs(1))
        ));
    }
}

/// How many whole intervals passed between a reading in `since` and one in `at` (both
/// brackets of readings in the limiter's own time), if the brackets tell.
fn refilled(interval: Duration, since: (Nanos, Nanos), at: (Nanos, Nanos)) -> Option<u64> {
    let whole = |from: Nanos, to: Nanos| {
        (to.saturating_duration_since(from).as_nanos() / interval.as_nanos()) as u64
    };
    let (least, most) = (whole(since.1, at.0), whole(since.0, at.1));
    (least == most).then_some(least)
}

// Go's `TestWaitCancel`: 10/s, burst 3. A wait of 2 goes at once; a wait of 3, cancelled after
// 100 ms, gives its tokens back; then 1 token is left and 1 has refilled, and a wait of 2 goes
// at once. Judged in the limiter's own readings: a run in which this thread is kept off the
// cores until the 3 tokens were there (so that the cancel had nothing to give back), or whose
// readings do not tell how many tokens refilled, is not judged.
#[test]
fn go_wait_cancel() {
    let quota = Quota::per_second(10).with_burst(3);
    let interval = quota.emission_interval();
    until_judged("go_wait_cancel", || {
        let limiter = Limiter::new(quota);
        let reading = || decision_time(limiter.clock(), &quota);
        let before = reading();
        assert!(
            ready_at_first_poll(limiter.until_ready(2, Duration::from_secs(1))),
            "2 of 3 tokens are there"
        );
        let spent = (before, reading());
        let due = before.saturating_add(2 * interval);
        {
            let mut wait = Box::pin(limiter.until_ready(3, Duration::from_secs(1)));
            let mut cx = Context::from_waker(Waker::noop());
            let mut ended = wait.as_mut().poll(&mut cx).is_ready();
            if !ended {
                std::thread::sleep(Duration::from_millis(110));
                ended = wait.as_mut().poll(&mut cx).is_ready();
            }
            if ended {
                assert!(reading() >= due, "ended before 200 ms");
                return false;
            }
            // Dropped here: cancelled, its tokens given back.
        }
        if reading() >= due {
            return false;
        }
        let (from, available, to) = (reading(), limiter.available(), reading());
        let Some(refilled) = refilled(interval, spent, (from, to)) else {
            return false;
        };
        assert_eq!(
            u64::from(available),
            (1 + refilled).min(3),
            "a token is missing after the cancel"
        );
        if available >= 2 {
            assert!(ready_at_first_poll(
                limiter.until_ready(2, Duration::from_secs(1))
            ));
        }
        true
    });
}

// Go's `TestWaitTimeout`: a wait of 2 goes at once; a wait of 3 that would take longer than its
// deadline is refused at once, booking nothing: the token the first wait left is there (with
// what refilled since, by the limiter's readings). A run whose readings do not tell, or in
// which the second wait came late enough to be within its deadline, is not judged.
#[test]
fn go_wait_timeout() {
    let quota = Quota::per_second(10).with_burst(3);
    until_judged("go_wait_timeout", || {
        let limiter = Limiter::new(quota);
        let reading = || decision_time(limiter.clock(), &quota);
        let before = reading();
        returns_at_once("a wait for tokens that are there", || {
            limiter.wait(2, Duration::from_millis(100)).unwrap()
        });
        let spent = (before, reading());
        // 2 more tokens are 200 ms from the first wait's reading: a wait beyond the deadline,
        // unless this thread was kept off the cores for 100 ms of it.
        let (answer, slept) = slept(|| limiter.wait(3, Duration::from_millis(100)));
        if answer.is_ok() {
            let passed = reading().saturating_duration_since(before);
            assert!(
                passed >= Duration::from_millis(100),
                "booked after {passed:?}"
            );
            return false;
        }
        assert!(!slept, "refused after a sleep");
        let (from, available, to) = (reading(), limiter.available(), reading());
        let Some(refilled) = refilled(quota.emission_interval(), spent, (from, to)) else {
            return false;
        };
        assert_eq!(
            u64::from(available),
            (1 + refilled).min(3),
            "a token is missing after the refused wait"
        );
        true
    });
}
