//! `pace`: streams, sinks and writers paced through a limiter, on a manual clock: what waits,
//! what is given back on each way out, what a named limiter counts. The rates on the real
//! clock are `pace_rate.rs`'s, the writer's bookings `pace_write.rs`'s.
#![cfg(feature = "async")]

use crate::common::manual;
use cellrate::pace::PaceExt;
use cellrate::{KeyedLimiter, ManualClock, Quota};
use futures::executor::block_on;
use futures::task::noop_waker_ref;
use futures::{stream, SinkExt, Stream, StreamExt};
use std::pin::pin;
use std::task::{Context, Poll};
use std::time::Duration;

fn poll_next<S: Stream + Unpin>(s: &mut S) -> Poll<Option<S::Item>> {
    s.poll_next_unpin(&mut Context::from_waker(noop_waker_ref()))
}

#[test]
fn an_item_waits_for_its_cost_and_a_zero_cost_item_passes_at_once() {
    let (limiter, clock) = manual(Quota::per_second(10).with_burst(5));
    let items = stream::iter([5u32, 3, 0]);
    let mut paced = pin!(items.paced_by(&limiter, |&c| c));
    assert_eq!(poll_next(&mut paced), Poll::Ready(Some(5)));
    assert!(
        poll_next(&mut paced).is_pending(),
        "3 tokens are 300 ms away"
    );
    clock.advance(Duration::from_millis(299));
    assert!(poll_next(&mut paced).is_pending());
    clock.advance(Duration::from_millis(1));
    assert_eq!(poll_next(&mut paced), Poll::Ready(Some(3)));
    assert_eq!(poll_next(&mut paced), Poll::Ready(Some(0)));
    assert_eq!(poll_next(&mut paced), Poll::Ready(None));
    assert_eq!(limiter.available(), 0);
}

#[test]
fn an_item_above_the_burst_is_booked_a_burst_at_a_time() {
    let (limiter, clock) = manual(Quota::per_second(10).with_burst(4));
    let mut paced = pin!(stream::iter([10u32]).paced_by(&limiter, |&c| c));
    assert!(poll_next(&mut paced).is_pending(), "4 now, then 4, then 2");
    clock.advance(Duration::from_millis(400));
    assert!(poll_next(&mut paced).is_pending());
    clock.advance(Duration::from_millis(199));
    assert!(poll_next(&mut paced).is_pending());
    clock.advance(Duration::from_millis(1));
    assert_eq!(poll_next(&mut paced), Poll::Ready(Some(10)));
    // 10 tokens spent over 600 ms on a 4-token bucket: it is empty again now.
    assert_eq!(limiter.available(), 0);
    clock.advance(Duration::from_millis(400));
    assert_eq!(limiter.available(), 4);
}

#[test]
fn dropping_a_waiting_stream_gives_the_booked_tokens_back() {
    let (limiter, _clock) = manual(Quota::per_second(1).with_burst(3));
    limiter.check_n(2).unwrap();
    {
        let mut paced = pin!(stream::iter([3u32]).paced_by(&limiter, |&c| c));
        assert!(poll_next(&mut paced).is_pending());
        assert_eq!(limiter.available(), 0, "booked while waiting");
    }
    assert_eq!(limiter.available(), 1, "the booking was cancelled");
}

#[test]
fn a_key_of_a_keyed_limiter_paces_its_own_stream() {
    let clock = ManualClock::new();
    let limiter = KeyedLimiter::<&str, _>::builder(Quota::per_second(10).with_burst(2))
        .clock(clock)
        .build();
    let alice = limiter.key("alice");
    let mut paced = pin!(stream::iter(0..3).paced(&alice));
    assert_eq!(poll_next(&mut paced), Poll::Ready(Some(0)));
    assert_eq!(poll_next(&mut paced), Poll::Ready(Some(1)));
    assert!(poll_next(&mut paced).is_pending());
    assert_eq!(
        limiter.key("bob").available(),
        2,
        "other keys are untouched"
    );
}

#[test]
fn a_writer_gives_back_the_bytes_the_inner_writer_did_not_take() {
    let (limiter, _clock) = manual(Quota::per_second(10).with_burst(10));
    let mut buffer = [0u8; 3];
    let mut out = futures::io::Cursor::new(&mut buffer[..]).paced_write(&limiter);
    let written = block_on(futures::io::AsyncWriteExt::write(
        &mut out,
        &[1, 2, 3, 4, 5],
    ))
    .unwrap();
    assert_eq!(written, 3, "the cursor holds 3 bytes");
    assert_eq!(
        limiter.available(),
        5,
        "5 booked (half the burst), the other 2 held for the next write"
    );
    drop(out);
    assert_eq!(limiter.available(), 7, "paid for 5, 2 given back");
}

/// A sink that is never ready: what a full channel or a slow socket does.
struct NeverReady;

impl futures::Sink<u32> for NeverReady {
    type Error = ();
    fn poll_ready(self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
        Poll::Pending
    }
    fn start_send(self: std::pin::Pin<&mut Self>, _: u32) -> Result<(), ()> {
        unreachable!("never ready")
    }
    fn poll_flush(self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_close(self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
        Poll::Ready(Ok(()))
    }
}

#[test]
fn a_sink_dropped_while_its_inner_sink_is_not_ready_gives_the_tokens_back() {
    let (limiter, _clock) = manual(Quota::per_second(10).with_burst(10));
    let mut paced = NeverReady.paced_sink_by(&limiter, |&n: &u32| n);
    let mut cx = Context::from_waker(noop_waker_ref());
    paced.start_send_unpin(5).unwrap();
    assert!(
        paced.poll_flush_unpin(&mut cx).is_pending(),
        "tokens there, sink not ready"
    );
    assert_eq!(limiter.available(), 5);
    let (_, held) = paced.into_inner();
    assert_eq!(held, Some(5), "the item held comes back");
    assert_eq!(limiter.available(), 10, "and so do its tokens");

    let mut paced = NeverReady.paced_sink_by(&limiter, |&n: &u32| n);
    paced.start_send_unpin(4).unwrap();
    assert!(paced.poll_flush_unpin(&mut cx).is_pending());
    drop(paced);
    assert_eq!(limiter.available(), 10);
}

#[test]
fn into_inner_returns_the_item_waiting_and_gives_its_tokens_back() {
    let (limiter, clock) = manual(Quota::per_second(1).with_burst(5));
    let mut paced = stream::iter([5u32, 4, 3]).paced_by(&limiter, |&c| c);
    assert_eq!(poll_next(&mut paced), Poll::Ready(Some(5)));
    assert!(poll_next(&mut paced).is_pending(), "4 tokens are 4 s away");
    let (mut rest, waiting) = paced.into_inner();
    assert_eq!(waiting, Some(4));
    assert_eq!(
        poll_next(&mut rest),
        Poll::Ready(Some(3)),
        "the stream goes on"
    );
    clock.advance(Duration::from_secs(5));
    assert_eq!(limiter.available(), 5, "the 4 booked came back");
}

#[test]
fn a_named_limiter_counts_each_item_handed_on_and_none_given_back() {
    let (limiter, clock) = manual(Quota::per_second(10).with_burst(2));
    let limiter = limiter.named("paced");
    let mut paced = stream::iter([1u32, 1, 1, 1]).paced_by(&limiter, |&c| c);
    assert_eq!(poll_next(&mut paced), Poll::Ready(Some(1)));
    assert_eq!(poll_next(&mut paced), Poll::Ready(Some(1)));
    assert!(poll_next(&mut paced).is_pending());
    clock.advance(Duration::from_millis(100));
    assert_eq!(poll_next(&mut paced), Poll::Ready(Some(1)));
    assert!(poll_next(&mut paced).is_pending());
    drop(paced);
    let stats = limiter.stats();
    assert_eq!(
        (stats.allowed, stats.denied),
        (3, 0),
        "the fourth was given back"
    );
}
