//! `pace`: a paced writer's bookings. What an inner writer does not take is offered again
//! within the hold, then given back under the give-back rule; a writer dropped or closed gives
//! back what it did not hand on; writers sharing a limit book only what they are offered, and
//! get a half each.
//! All on a manual clock, polled by hand.
#![cfg(feature = "async")]

use crate::common::manual;
use cellrate::pace::{PaceExt, WRITE_HOLD};
use cellrate::{Clock, Nanos, Quota};
use futures::io::{AsyncWrite, AsyncWriteExt};
use futures::task::noop_waker_ref;
use std::cell::Cell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

/// An inner writer that takes at most `takes` bytes a call (none while it is 0: Pending), and
/// counts what it took.
#[derive(Clone, Default)]
struct Gate {
    takes: Rc<Cell<usize>>,
    taken: Rc<Cell<usize>>,
}

impl AsyncWrite for Gate {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.takes.get().min(buf.len()) {
            0 => Poll::Pending,
            n => {
                self.taken.set(self.taken.get() + n);
                Poll::Ready(Ok(n))
            }
        }
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

fn gate(takes: usize) -> Gate {
    let g = Gate::default();
    g.takes.set(takes);
    g
}

fn write<W: AsyncWrite + Unpin>(w: &mut W, len: usize) -> Poll<io::Result<usize>> {
    let buf = vec![0u8; len];
    Pin::new(w).poll_write(&mut Context::from_waker(noop_waker_ref()), &buf)
}

#[test]
fn a_writer_dropped_while_its_inner_writer_is_pending_gives_its_tokens_back() {
    let (limiter, _clock) = manual(Quota::per_second(10).with_burst(20));
    let mut out = gate(0).paced_write(&limiter);
    assert!(
        write(&mut out, 10).is_pending(),
        "booked, the inner writer pending"
    );
    assert_eq!(limiter.available(), 10);
    drop(out);
    assert_eq!(
        limiter.available(),
        20,
        "nothing was written: all of it back"
    );
}

#[test]
fn a_writer_closed_or_turned_back_gives_back_what_its_inner_writer_did_not_take() {
    let (limiter, _clock) = manual(Quota::per_second(10).with_burst(20));
    let inner = gate(3);
    let mut out = inner.clone().paced_write(&limiter);
    assert!(matches!(write(&mut out, 10), Poll::Ready(Ok(3))));
    assert_eq!(
        limiter.available(),
        10,
        "the other 7 are held for the next write"
    );
    let _ = out.into_inner();
    assert_eq!(limiter.available(), 17);

    let mut out = inner.clone().paced_write(&limiter);
    assert!(matches!(write(&mut out, 7), Poll::Ready(Ok(3))));
    let closed = Pin::new(&mut out).poll_close(&mut Context::from_waker(noop_waker_ref()));
    assert!(closed.is_ready());
    assert_eq!(limiter.available(), 14, "7 booked, 3 taken");
    assert_eq!(inner.taken.get(), 6);
}

#[test]
fn the_rest_of_a_booking_is_offered_again_within_the_hold_and_given_back_after_it() {
    let (limiter, clock) = manual(Quota::per_second(1_000).with_burst(200));
    let inner = gate(30);
    let mut out = inner.clone().paced_write(&limiter);
    // One booking of 100 bytes serves a write_all's calls: no second booking, no wait.
    for left in [100, 70, 40, 10] {
        assert!(matches!(write(&mut out, left), Poll::Ready(Ok(n)) if n == left.min(30)));
    }
    assert_eq!((inner.taken.get(), limiter.available()), (100, 100));
    // A booking left unused past the hold goes back before the next one is made.
    clock.advance(Duration::from_millis(100));
    assert!(matches!(write(&mut out, 100), Poll::Ready(Ok(30))));
    assert_eq!(limiter.available(), 100, "70 held for the next write");
    clock.advance(WRITE_HOLD + Duration::from_nanos(1));
    assert!(matches!(write(&mut out, 100), Poll::Ready(Ok(30))));
    assert_eq!(limiter.available(), 75, "70 back, 5 refilled, 100 booked");
    drop(out);
    assert_eq!(
        limiter.available(),
        145,
        "the second booking's 70 came back too"
    );
}

/// Writer A's booking is ready but its inner writer pending, B books behind it, A writes
/// 1 byte and is dropped, D books. A give-back that restored A's unused bytes under B's
/// booking would let D's bytes pass early; the writers see what the give-back rule says
/// (nothing comes back while a later booking waits above it): D waits for its own tokens.
#[test]
fn a_give_back_under_a_later_booking_lets_nothing_through_early() {
    let (limiter, clock) = manual(Quota::per_second(1_000).with_burst(1_000));
    let at = |ms: u64| Nanos::new(ms * 1_000_000);
    // 1,000 bytes a second, 1,000 deep: 500 spent at 0, A books 500 (ready at 0), B 500
    // (ready at 500 ms, the bucket 500 ms beyond its depth), A settles at 1 byte under B's
    // waiting booking (nothing back), so D's 500 are ready at 1 s.
    limiter.check_n(500).unwrap();

    let a_inner = gate(0);
    let mut a = a_inner.clone().paced_write(&limiter);
    let mut b = gate(usize::MAX).paced_write(&limiter);
    let mut d = gate(usize::MAX).paced_write(&limiter);
    assert!(
        write(&mut a, 500).is_pending(),
        "booked, the inner writer pending"
    );
    assert!(
        write(&mut b, 500).is_pending(),
        "booked behind A, ready at 0.5 s"
    );
    a_inner.takes.set(1);
    assert!(matches!(write(&mut a, 500), Poll::Ready(Ok(1))));
    drop(a);
    assert!(write(&mut d, 500).is_pending());

    clock.set(at(500));
    assert!(matches!(write(&mut b, 500), Poll::Ready(Ok(500))));
    clock.set(at(999));
    assert!(
        write(&mut d, 500).is_pending(),
        "D waits for its own tokens"
    );
    clock.set(at(1_000));
    assert!(matches!(write(&mut d, 500), Poll::Ready(Ok(500))));
}

#[test]
fn a_named_limiter_counts_each_booking_written_from_and_none_given_back_whole() {
    let (limiter, clock) = manual(Quota::per_second(1_000).with_burst(200));
    let limiter = limiter.named("paced-writer");
    let mut out = gate(30).paced_write(&limiter);
    for left in [100, 70, 40, 10] {
        assert!(write(&mut out, left).is_ready());
    }
    assert_eq!(
        limiter.stats().allowed,
        1,
        "one booking, written in four calls"
    );
    limiter.check_n(100).unwrap();
    assert!(write(&mut out, 50).is_pending(), "50 more are 50 ms away");
    drop(out);
    assert_eq!(
        limiter.stats().allowed,
        2,
        "the check, not the booking given back whole"
    );
    clock.advance(Duration::from_millis(200));
    let mut out = gate(30).paced_write(&limiter);
    assert!(write(&mut out, 100).is_ready());
    drop(out);
    assert_eq!(limiter.stats().allowed, 3, "30 of 100 written: counted");
}

/// Two writers sharing a limit, each writing 4,096 bytes at a time as fast as it may, one
/// whose inner writer takes 300 bytes a call and one whose takes all it is offered: each gets
/// half of the rate, and together no more than the quota. Two seconds of the limiter's time, a
/// millisecond a step, each writer polled once a step.
#[test]
fn two_writers_sharing_a_limit_get_a_half_each_whatever_their_inner_writers_take() {
    const RATE: u32 = 100_000;
    const BURST: u32 = 4_096;
    const RUN_FOR: Duration = Duration::from_secs(2);
    let (limiter, clock) = manual(Quota::per_second(RATE).with_burst(BURST));
    let gates = [gate(300), gate(usize::MAX)];
    let mut writers: Vec<_> = gates
        .iter()
        .map(|gate| {
            let mut out = gate.clone().paced_write(&limiter);
            Box::pin(async move {
                loop {
                    out.write_all(&[0u8; 4_096]).await.unwrap();
                }
            })
        })
        .collect();
    let mut cx = Context::from_waker(noop_waker_ref());
    while clock.now() < Nanos::ZERO.saturating_add(RUN_FOR) {
        for writer in &mut writers {
            assert!(writer.as_mut().poll(&mut cx).is_pending());
        }
        clock.advance(Duration::from_millis(1));
    }
    let taken = gates.map(|gate| gate.taken.get());
    let total = taken[0] + taken[1];
    let most = BURST as usize + RATE as usize * RUN_FOR.as_secs() as usize;
    assert!(total <= most, "{taken:?} bytes: more than the quota");
    assert!(total >= most * 99 / 100, "{taken:?} bytes: the limit idled");
    for share in taken {
        let share = share as f64 / total as f64;
        assert!((0.45..=0.55).contains(&share), "shares {taken:?}");
    }
}
