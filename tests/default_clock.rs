//! The default clock (`Limiter::new`, `KeyedLimiter::new`: `TickClock`) as a new user meets
//! it: checks mixed with waits, reservations and give-backs, on quotas deep enough for its
//! cached reading. Every operation on a bucket reads the same time, so none of them loses a
//! token to another's reading; and waits end neither before the limiter's own time says ready
//! nor, in real time, before the tokens are due. The waiting cases are governor's own tests
//! (`tests/future.rs`) and Go's `x/time/rate` (`TestWaitCancel`, `TestWaitTimeout`), translated.

use cellrate::{KeyedLimiter, Limiter, Quota};
use futures::executor::block_on;
use std::future::Future;
use std::time::{Duration, Instant};

/// Each case runs this often on fresh limiters: a reading taken another way than the checks'
/// lost a token in every run of them, so a few runs suffice.
const RUNS: usize = 20;

#[test]
fn a_wait_leaves_the_tokens_it_did_not_take() {
    for _ in 0..RUNS {
        let limiter = Limiter::new(Quota::per_second(10).with_burst(3));
        limiter.wait(2, Duration::from_secs(1)).unwrap();
        assert_eq!(limiter.available(), 1, "a token lost after a wait");
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
    let limiter = KeyedLimiter::<u32>::new(Quota::per_second(10).with_burst(1));
    for key in 0..(RUNS as u32 * 10) {
        let booked = limiter.key(&key).reserve(1, Duration::ZERO).unwrap();
        booked.cancel();
        assert!(limiter.check_key(&key).is_ok(), "key {key}: a token lost");
        assert!(
            limiter.check_key(&key).is_err(),
            "key {key}: a token made up"
        );
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

// governor's `pauses`: exhausted, the next token is an interval away.
#[test]
fn governor_pauses() {
    let limiter = Limiter::new(Quota::per_second(10));
    while limiter.check().is_ok() {}
    let start = Instant::now();
    block_on(limiter.until_ready(1, Duration::MAX)).unwrap();
    assert!(
        start.elapsed() >= Duration::from_millis(100),
        "{:?}",
        start.elapsed()
    );
}

// governor's `pauses_n`: 6 of 10 spent, 5 more need one more interval.
#[test]
fn governor_pauses_n() {
    let limiter = Limiter::new(Quota::per_second(10));
    for _ in 0..6 {
        limiter.check().unwrap();
    }
    let start = Instant::now();
    block_on(limiter.until_ready(5, Duration::from_secs(1))).unwrap();
    assert!(
        start.elapsed() >= Duration::from_millis(100),
        "{:?}",
        start.elapsed()
    );
}

// governor's `pauses_keyed`, timed from before the limiter is made, as governor does.
#[test]
fn governor_pauses_keyed() {
    let start = Instant::now();
    let limiter = KeyedLimiter::<u32>::new(Quota::per_second(10));
    while limiter.check_key(&1).is_ok() {}
    block_on(limiter.key(&1).until_ready(1, Duration::MAX)).unwrap();
    assert!(
        start.elapsed() >= Duration::from_millis(100),
        "{:?}",
        start.elapsed()
    );
}

// The keyed form of `pauses_n`.
#[test]
fn governor_pauses_keyed_n() {
    let limiter = KeyedLimiter::<u32>::new(Quota::per_second(10));
    for _ in 0..6 {
        limiter.check_key(&1).unwrap();
    }
    let start = Instant::now();
    block_on(limiter.key(&1).until_ready(5, Duration::from_secs(1))).unwrap();
    assert!(
        start.elapsed() >= Duration::from_millis(100),
        "{:?}",
        start.elapsed()
    );
}

// governor's `proceeds` and `proceeds_n`: tokens that are there are not waited for.
#[test]
fn governor_proceeds() {
    for limiter in [
        Limiter::new(Quota::per_second(2)),
        Limiter::new(Quota::per_second(3)),
    ] {
        // Ready at the first poll: no timer was set, whatever else the machine runs.
        let mut wait = Box::pin(limiter.until_ready(2, Duration::from_secs(1)));
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(matches!(
            wait.as_mut().poll(&mut cx),
            std::task::Poll::Ready(Ok(_))
        ));
    }
}

// Go's `TestWaitCancel`: 10/s, burst 3. A wait of 2 goes at once; a wait of 3, cancelled after
// 100 ms, gives its tokens back; then a wait of 2 goes at once (1 left, 1 refilled).
#[test]
fn go_wait_cancel() {
    let limiter = Limiter::new(Quota::per_second(10).with_burst(3));
    let start = Instant::now();
    block_on(limiter.until_ready(2, Duration::from_secs(1))).unwrap();
    assert!(start.elapsed() < Duration::from_millis(50));
    {
        let mut wait = Box::pin(limiter.until_ready(3, Duration::from_secs(1)));
        let waker = futures::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(
            wait.as_mut().poll(&mut cx).is_pending(),
            "3 tokens are 200 ms away"
        );
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            wait.as_mut().poll(&mut cx).is_pending(),
            "ended before 200 ms"
        );
        // Dropped here: cancelled, its tokens given back.
    }
    let start = Instant::now();
    block_on(limiter.until_ready(2, Duration::from_secs(1))).unwrap();
    assert!(
        start.elapsed() < Duration::from_millis(50),
        "a token is missing after the cancel: waited {:?}",
        start.elapsed()
    );
}

// Go's `TestWaitTimeout`: a wait of 2 goes at once; a wait of 3 that would take longer than its
// deadline is refused at once; the token the first wait left is there.
#[test]
fn go_wait_timeout() {
    let limiter = Limiter::new(Quota::per_second(10).with_burst(3));
    limiter.wait(2, Duration::from_millis(100)).unwrap();
    let start = Instant::now();
    assert!(limiter.wait(3, Duration::from_millis(100)).is_err());
    assert!(start.elapsed() < Duration::from_millis(50));
    assert_eq!(limiter.available(), 1, "a token is missing after the wait");
    assert!(limiter.check().is_ok());
}
