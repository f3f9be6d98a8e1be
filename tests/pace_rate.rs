//! `pace` on the real clock: achieved rates within 1% of the quota, and two writers sharing a
//! limit each getting half of it whatever their inner writers take per call. Its own test
//! binary, so that no other test's threads compete for the cores while it measures.
#![cfg(feature = "async")]

use cellrate::pace::PaceExt;
use cellrate::{Limiter, Quota};
use futures::executor::block_on;
use futures::io::{AsyncWrite, AsyncWriteExt};
use futures::{stream, SinkExt, StreamExt};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The rate achieved after the burst: `(units - burst) / elapsed`, in units per second.
fn rate_after_burst(units: u64, burst: u64, elapsed: Duration) -> f64 {
    (units - burst) as f64 / elapsed.as_secs_f64()
}

/// Runs `attempt` (which returns its achieved rate) until one is within 1% of `expected`, at
/// most three times. No attempt may be faster than the quota: that would be the pacer's fault.
/// Slower can be the machine's: a thread that is not run for longer than the burst's slack
/// loses that time, as any token bucket's user does, so the best of three is judged.
fn assert_within_1_percent(expected: f64, mut attempt: impl FnMut() -> f64) {
    let mut rates = Vec::new();
    for _ in 0..3 {
        let rate = attempt();
        assert!(
            rate <= expected * 1.001,
            "achieved {rate:.1}/s against {expected}/s"
        );
        rates.push(rate);
        if rate >= expected * 0.99 {
            return;
        }
    }
    panic!("achieved {rates:.1?} per second against {expected}/s");
}

#[test]
fn a_paced_stream_keeps_the_quota_rate() {
    assert_within_1_percent(1_000.0, || {
        let limiter = Limiter::new(Quota::per_second(1_000).with_burst(10));
        let start = Instant::now();
        let count = block_on(stream::iter(0..2_010).paced(&limiter).count());
        assert_eq!(count, 2_010);
        rate_after_burst(2_010, 10, start.elapsed())
    });
}

#[test]
fn a_paced_writer_keeps_the_byte_rate() {
    assert_within_1_percent(100_000.0, || {
        let limiter = Arc::new(Limiter::new(Quota::per_second(100_000).with_burst(1_000)));
        let mut out = Vec::new().paced_write(limiter);
        let start = Instant::now();
        block_on(async {
            for _ in 0..201 {
                out.write_all(&[7u8; 1_000]).await.unwrap();
            }
            out.flush().await.unwrap();
        });
        assert_eq!(out.get_ref().len(), 201_000);
        rate_after_burst(201_000, 1_000, start.elapsed())
    });
}

#[test]
fn a_paced_sink_forwards_every_item_in_order_at_the_rate() {
    assert_within_1_percent(500.0, || {
        let limiter = Limiter::new(Quota::per_second(500).with_burst(5));
        let (tx, rx) = futures::channel::mpsc::unbounded::<u32>();
        let mut paced = tx.paced_sink_by(&limiter, |&n: &u32| n);
        let start = Instant::now();
        block_on(async {
            for n in [1, 2, 2] {
                paced.send(n).await.unwrap();
            }
            for _ in 0..1_000 {
                paced.send(1).await.unwrap();
            }
            paced.close().await.unwrap();
        });
        let elapsed = start.elapsed();
        let got: Vec<u32> = block_on(rx.collect());
        assert_eq!(got.len(), 1_003);
        assert_eq!(&got[..3], &[1, 2, 2]);
        rate_after_burst(1_005, 5, elapsed)
    });
}

/// A writer that drops what it is given, taking at most `per_call` bytes a call.
struct Discard {
    per_call: usize,
    taken: usize,
}

impl AsyncWrite for Discard {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let n = buf.len().min(self.per_call);
        self.taken += n;
        Poll::Ready(Ok(n))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[test]
fn two_writers_sharing_a_limit_get_a_half_each_whatever_their_inner_writers_take() {
    const RATE: u32 = 100_000;
    const BURST: u32 = 4_096;
    let limiter = Arc::new(Limiter::new(Quota::per_second(RATE).with_burst(BURST)));
    let run_for = Duration::from_secs(2);
    let start = Instant::now();
    let writers: Vec<_> = [300, usize::MAX]
        .into_iter()
        .map(|per_call| {
            let limiter = Arc::clone(&limiter);
            std::thread::spawn(move || {
                let mut out = Discard { per_call, taken: 0 }.paced_write(limiter);
                block_on(async {
                    while start.elapsed() < run_for {
                        out.write_all(&[0u8; 4_096]).await.unwrap();
                    }
                });
                out.get_ref().taken
            })
        })
        .collect();
    let taken: Vec<usize> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    let elapsed = start.elapsed();
    let total = (taken[0] + taken[1]) as f64;
    let most = BURST as f64 + RATE as f64 * elapsed.as_secs_f64();
    assert!(
        total <= most,
        "{total} bytes in {elapsed:?}: more than the quota"
    );
    for &share in &taken {
        let share = share as f64 / total;
        assert!((0.45..=0.55).contains(&share), "shares {taken:?}");
    }
}
