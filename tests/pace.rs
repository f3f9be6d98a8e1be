//! `pace`: streams, sinks and writers paced through a limiter. The rate tests run on the real
//! clock and check the achieved rate within 5%; the rest run on a manual clock.
#![cfg(feature = "async")]

use cellrate::pace::PaceExt;
use cellrate::{KeyedLimiter, Limiter, ManualClock, Quota};
use futures::executor::block_on;
use futures::io::AsyncWriteExt;
use futures::task::noop_waker_ref;
use futures::{stream, SinkExt, Stream, StreamExt};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The rate achieved after the burst: `(units - burst) / elapsed`, in units per second.
fn rate_after_burst(units: u64, burst: u64, elapsed: Duration) -> f64 {
    (units - burst) as f64 / elapsed.as_secs_f64()
}

fn assert_within_5_percent(rate: f64, expected: f64) {
    let error = (rate - expected).abs() / expected;
    assert!(error <= 0.05, "achieved {rate:.1}/s against {expected}/s");
}

#[test]
fn a_paced_stream_keeps_the_quota_rate() {
    let limiter = Limiter::new(Quota::per_second(1_000).with_burst(10));
    let start = Instant::now();
    let count = block_on(stream::iter(0..610).paced(&limiter).count());
    assert_eq!(count, 610);
    assert_within_5_percent(rate_after_burst(610, 10, start.elapsed()), 1_000.0);
}

#[test]
fn a_paced_writer_keeps_the_byte_rate() {
    let limiter = Arc::new(Limiter::new(Quota::per_second(100_000).with_burst(1_000)));
    let mut out = Vec::new().paced_write(limiter);
    let start = Instant::now();
    block_on(async {
        for _ in 0..61 {
            out.write_all(&[7u8; 1_000]).await.unwrap();
        }
        out.flush().await.unwrap();
    });
    assert_eq!(out.get_ref().len(), 61_000);
    assert_within_5_percent(rate_after_burst(61_000, 1_000, start.elapsed()), 100_000.0);
}

#[test]
fn a_paced_sink_forwards_every_item_in_order_at_the_rate() {
    let limiter = Limiter::new(Quota::per_second(500).with_burst(5));
    let (tx, rx) = futures::channel::mpsc::unbounded::<u32>();
    let mut paced = tx.paced_sink_by(&limiter, |&n: &u32| n);
    let start = Instant::now();
    block_on(async {
        for n in [1, 2, 2] {
            paced.send(n).await.unwrap();
        }
        for _ in 0..300 {
            paced.send(1).await.unwrap();
        }
        paced.close().await.unwrap();
    });
    let got: Vec<u32> = block_on(rx.collect());
    assert_eq!(got.len(), 303);
    assert_eq!(&got[..3], &[1, 2, 2]);
    assert_within_5_percent(rate_after_burst(305, 5, start.elapsed()), 500.0);
}

fn manual(per_second: u32, burst: u32) -> (Limiter<ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    let quota = Quota::per_second(per_second).with_burst(burst);
    (Limiter::with_clock(quota, clock.clone()), clock)
}

fn poll_next<S: Stream + Unpin>(s: &mut S) -> Poll<Option<S::Item>> {
    s.poll_next_unpin(&mut Context::from_waker(noop_waker_ref()))
}

#[test]
fn an_item_waits_for_its_cost_and_a_zero_cost_item_passes_at_once() {
    let (limiter, clock) = manual(10, 5);
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
    let (limiter, clock) = manual(10, 4);
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
    let (limiter, _clock) = manual(1, 3);
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
    let limiter = KeyedLimiter::<&str, _>::with_clock(Quota::per_second(10).with_burst(2), clock);
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
fn a_writer_refunds_the_bytes_the_inner_writer_did_not_take() {
    let (limiter, _clock) = manual(10, 8);
    let mut buffer = [0u8; 3];
    let mut out = futures::io::Cursor::new(&mut buffer[..]).paced_write(&limiter);
    let written = block_on(futures::io::AsyncWriteExt::write(
        &mut out,
        &[1, 2, 3, 4, 5],
    ))
    .unwrap();
    assert_eq!(written, 3, "the cursor holds 3 bytes");
    assert_eq!(limiter.available(), 5, "paid for 5, refunded 2");
}
