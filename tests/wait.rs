//! Waiting for tokens: `Limiter::wait_n` (blocking, real clock) and, with feature `async`,
//! `Limiter::until_ready_n` on a hand-written executor. Real-clock tests check only what the
//! limiter promises, in its own time or in events a loaded machine cannot fake: never early
//! (by the limiter's readings), refusals at once (no sleep), booking order.

use crate::common::{decision_time, returns_at_once, until_judged};
use cellrate::{Clock, Limiter, MonotonicClock, Nanos, Quota, TickClock};
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(3600);

#[test]
fn sequential_waits_are_spaced_by_the_emission_interval() {
    let quota = Quota::per_second(5).with_burst(1);
    let limiter = Limiter::new(quota);
    let clock = limiter.clock();
    // The reading the limiter decides on, taken as it takes it: the first booking's is no
    // earlier.
    let start = clock.now_within(Nanos::new(quota.replenish_all().as_nanos() as u64 / 16));
    let started = Instant::now();
    for _ in 0..4 {
        let allowed = limiter.wait(1, LONG).unwrap();
        assert_eq!(allowed.remaining(), 0);
    }
    // The 1st call goes at once, the 4th is ready 3 intervals after the 1st booking, by the
    // limiter's own time: never early. In real time it may end earlier by the lag of the
    // first reading, which a late refresher on a loaded machine can make longer than a tick.
    let by_its_time = clock.now().saturating_duration_since(start);
    assert!(by_its_time >= Duration::from_millis(600), "{by_its_time:?}");
    // Nor five times later: far above what a loaded machine adds to 600 ms of sleeps.
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}

#[test]
fn a_wait_beyond_max_wait_is_refused_at_once_and_books_nothing() {
    let limiter = Limiter::new(Quota::per_second(1));
    limiter.wait(1, LONG).unwrap();
    let first_booked_by = limiter.clock().now();
    // The next token is a second away: beyond max_wait unless this thread is kept off the
    // cores for 900 ms.
    let refused = returns_at_once("a wait beyond max_wait", || {
        limiter.wait(1, Duration::from_millis(100)).unwrap_err()
    });
    let retry = refused.retry_after().unwrap();
    // At most the interval, and the two ticks the default clock's cached reading adds.
    let most = Duration::from_secs(1) + 2 * TickClock::TICK;
    assert!(
        retry > Duration::from_millis(100) && retry <= most,
        "{retry:?}"
    );
    // Had the refusal booked, the next slot would be two intervals after the first booking.
    let next = limiter.reserve(1, LONG).unwrap();
    assert!(next.ready_at() <= first_booked_by.saturating_add(Duration::from_secs(1)));
}

#[test]
fn a_cost_above_the_burst_is_refused_at_once() {
    let limiter = Limiter::new(Quota::per_second(5));
    let refused = returns_at_once("a cost above the burst", || {
        limiter.wait(6, Duration::MAX).unwrap_err()
    });
    assert_eq!(refused.retry_after(), None);
    assert_eq!(limiter.available(), 5);
}

thread_local! {
    /// Every reading of a `RecordingClock` made by this thread.
    static READINGS: RefCell<Vec<Nanos>> = const { RefCell::new(Vec::new()) };
}

/// The monotonic clock, remembering per thread what it answered: the first reading inside
/// `wait` is the `now` its reservation was booked at.
struct RecordingClock(MonotonicClock);

impl Clock for RecordingClock {
    fn now(&self) -> Nanos {
        let now = self.0.now();
        READINGS.with(|r| r.borrow_mut().push(now));
        now
    }
}

/// One waiter's story: where it was booked and when it woke.
struct Waiter {
    /// The TAT its booking left: its place in line.
    slot: u64,
    ready_at: u64,
    woke_at: u64,
    wake_rank: usize,
}

#[test]
fn concurrent_waiters_wake_in_booking_order_and_never_early() {
    const THREADS: usize = 8;
    let quota = Quota::per_second(20).with_burst(1);
    let interval = quota.emission_interval().as_nanos() as u64;
    let limiter = Limiter::with_clock(quota, RecordingClock(MonotonicClock::new()));
    let start = Barrier::new(THREADS);
    let woken = AtomicUsize::new(0);
    let mut waiters: Vec<Waiter> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    READINGS.with(|r| r.borrow_mut().clear());
                    let allowed = limiter.wait(1, LONG).unwrap();
                    let wake_rank = woken.fetch_add(1, Ordering::Relaxed);
                    let woke_at = limiter.clock().0.now().as_u64();
                    let booked_at = READINGS.with(|r| r.borrow()[0]).as_u64();
                    let slot = booked_at + allowed.reset_after().as_nanos() as u64;
                    Waiter {
                        slot,
                        ready_at: slot - interval, // burst 1: ready one interval before full
                        woke_at,
                        wake_rank,
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    waiters.sort_by_key(|w| w.slot);
    for pair in waiters.windows(2) {
        assert!(
            pair[1].slot >= pair[0].slot + interval,
            "two waiters share a slot"
        );
    }
    for w in &waiters {
        assert!(
            w.woke_at >= w.ready_at,
            "woke {} ns early",
            w.ready_at - w.woke_at
        );
    }
    // In booking order: a waiter returns after one booked later only if it was kept off the
    // cores past that one's slot (its wake reading is past the later one's `ready_at`).
    for (i, earlier) in waiters.iter().enumerate() {
        for later in &waiters[i + 1..] {
            assert!(
                earlier.wake_rank < later.wake_rank || earlier.woke_at >= later.ready_at,
                "woke out of booking order"
            );
        }
    }
}

#[cfg(feature = "async")]
mod until_ready {
    use super::LONG;
    use crate::common::decision_time;
    use cellrate::{Clock, Limiter, ManualClock, Nanos, Quota};
    use std::future::Future;
    use std::pin::pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    use std::thread::{self, Thread};
    use std::time::Duration;

    /// Wakes a parked thread: the whole of the executor below.
    struct Unpark(Thread);

    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    /// Runs a future to completion on this thread, parking while it is pending.
    fn block_on<F: Future>(future: F) -> F::Output {
        let mut future = pin!(future);
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        let mut cx = Context::from_waker(&waker);
        loop {
            match future.as_mut().poll(&mut cx) {
                Poll::Ready(output) => return output,
                Poll::Pending => thread::park(),
            }
        }
    }

    /// Polls `future` once with a waker that does nothing.
    fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    fn manual(per_second: u32, burst: u32) -> Limiter<ManualClock> {
        Limiter::with_clock(
            Quota::per_second(per_second).with_burst(burst),
            ManualClock::new(),
        )
    }

    #[test]
    fn until_ready_returns_after_the_wait() {
        let quota = Quota::per_second(5).with_burst(1);
        let limiter = Limiter::new(quota);
        let before = decision_time(limiter.clock(), &quota);
        let mut first = pin!(limiter.until_ready(1, LONG));
        assert!(
            matches!(poll_once(first.as_mut()), Poll::Ready(Ok(_))),
            "the first token is there"
        );
        block_on(limiter.until_ready(1, LONG)).unwrap();
        // The second is an interval after the first, by the limiter's own time.
        let waited = limiter.clock().now().saturating_duration_since(before);
        assert!(waited >= Duration::from_millis(200), "{waited:?}");
    }

    #[test]
    fn a_completed_wait_keeps_its_tokens() {
        let limiter = manual(10, 1);
        limiter.check_n(1).unwrap(); // the next token is 100 ms away on the manual clock
        block_on(limiter.until_ready(1, LONG)).unwrap();
        let peek = limiter.check_n(0).unwrap();
        assert_eq!(
            peek.reset_after(),
            Duration::from_millis(200),
            "booking kept"
        );
    }

    #[test]
    fn a_dropped_future_gives_its_tokens_back() {
        let limiter = manual(1, 2);
        let twin = manual(1, 2);
        limiter.check_n(1).unwrap();
        twin.check_n(1).unwrap();
        assert_eq!(limiter.available(), 1);
        {
            let mut waiting = pin!(limiter.until_ready(2, LONG));
            assert!(
                poll_once(waiting.as_mut()).is_pending(),
                "2 tokens need 1 s"
            );
            assert_eq!(limiter.available(), 0, "booked on the first poll");
            assert_eq!(
                limiter.check_n(0).unwrap().reset_after(),
                Duration::from_secs(3)
            );
        }
        assert_eq!(limiter.available(), 1);
        let next =
            |l: &Limiter<ManualClock>| l.at(Nanos::ZERO).reserve(2, LONG).map(|r| r.ready_at());
        assert_eq!(next(&limiter), Ok(Nanos::new(1_000_000_000)));
        assert_eq!(next(&twin), Ok(Nanos::new(1_000_000_000)));
    }

    #[test]
    fn until_ready_takes_one_token() {
        let limiter = manual(10, 2);
        block_on(limiter.until_ready(1, Duration::MAX)).unwrap();
        assert_eq!(limiter.available(), 1);
        let keyed = cellrate::KeyedLimiter::<u8, _>::builder(Quota::per_second(10).with_burst(2))
            .clock(ManualClock::new())
            .build();
        block_on(keyed.key(&3).until_ready(1, Duration::MAX)).unwrap();
        assert_eq!(keyed.key(&3).available(), 1);
    }

    #[test]
    fn a_future_never_polled_books_nothing() {
        let limiter = manual(1, 2);
        drop(limiter.until_ready(2, LONG));
        assert_eq!(limiter.available(), 2);
    }

    #[test]
    fn refusals_resolve_on_the_first_poll_and_book_nothing() {
        let limiter = manual(1, 2);
        let mut too_costly = pin!(limiter.until_ready(3, LONG));
        match poll_once(too_costly.as_mut()) {
            Poll::Ready(Err(refused)) => assert_eq!(refused.retry_after(), None),
            other => panic!("cost above burst: {other:?}"),
        }
        limiter.check_n(2).unwrap();
        let mut too_long = pin!(limiter.until_ready(1, Duration::from_millis(900)));
        match poll_once(too_long.as_mut()) {
            Poll::Ready(Err(refused)) => {
                assert_eq!(refused.retry_after(), Some(Duration::from_secs(1)))
            }
            other => panic!("beyond max_wait: {other:?}"),
        }
        assert_eq!(
            limiter.check_n(0).unwrap().reset_after(),
            Duration::from_secs(2),
            "nothing booked"
        );
    }
}

#[test]
fn wait_takes_one_token_with_no_deadline() {
    let quota = Quota::per_second(5).with_burst(1);
    // A run in which this thread is kept off the cores until a third token is due, before it
    // looks, is not judged.
    until_judged("wait_takes_one_token_with_no_deadline", || {
        let limiter = Limiter::new(quota);
        let (before, started) = (decision_time(limiter.clock(), &quota), Instant::now());
        limiter.wait(1, Duration::MAX).unwrap();
        limiter.wait(1, Duration::MAX).unwrap();
        let waited = limiter.clock().now().saturating_duration_since(before);
        assert!(waited >= Duration::from_millis(200), "{waited:?}");
        // Nor many times later: far above what a loaded machine adds to a 200 ms sleep.
        let elapsed = started.elapsed();
        assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
        let available = limiter.available();
        let third_due = before.saturating_add(Duration::from_millis(400));
        if decision_time(limiter.clock(), &quota) >= third_due {
            return false;
        }
        assert_eq!(available, 0, "the second wait left its token");
        true
    });
}

#[test]
fn a_keyed_wait_takes_the_keys_token() {
    let quota = Quota::per_second(5).with_burst(1);
    let limiter = cellrate::KeyedLimiter::<u32>::new(quota);
    let before = decision_time(limiter.clock(), &quota);
    returns_at_once("two keys' first tokens", || {
        limiter.key(&1).wait(1, Duration::MAX).unwrap();
        limiter.key(&2).wait(1, Duration::MAX).unwrap(); // another key: its own bucket, no wait
    });
    limiter.key(&1).wait(1, Duration::MAX).unwrap();
    let waited = limiter.clock().now().saturating_duration_since(before);
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
}
