//! `pace`: a paced stream, sink or writer on a key that a full `DenyNewKeys` table refuses is
//! woken once the refusal's time has passed, and goes on when room appears (real clock, real
//! executor).
#![cfg(feature = "async")]

use cellrate::pace::PaceExt;
use cellrate::{KeyedLimiter, OverflowPolicy, Quota};
use futures::io::AsyncWriteExt;
use futures::{stream, SinkExt, StreamExt};
use std::time::{Duration, Instant};

/// How long a key filled now stays unreclaimable: its one token comes back after this.
const FULL_FOR: Duration = Duration::from_millis(50);

/// A table of 8 keys whose slots are all held by keys just spent, so that a new key is
/// refused for lack of room until they are full again, `FULL_FOR` from now.
fn full_table() -> KeyedLimiter<u64> {
    let limiter = KeyedLimiter::<u64>::builder(Quota::per_second(20).with_burst(1))
        .max_keys(8)
        .overflow(OverflowPolicy::DenyNewKeys)
        .build();
    for key in 0..limiter.capacity() as u64 + 2 {
        let _ = limiter.check_key(&key);
    }
    let refused = limiter.key(&1_000).reserve(1, Duration::ZERO);
    assert!(refused.is_err(), "the table has no room for a new key");
    limiter
}

/// Runs `work` under a timeout far above the time room takes to appear.
async fn within_a_second<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(2), work)
        .await
        .expect("the adapter was woken when room appeared")
}

#[tokio::test]
async fn a_paced_stream_on_a_refused_key_goes_on_when_room_appears() {
    let limiter = full_table();
    let start = Instant::now();
    let key = limiter.key(&1_000);
    let items: Vec<u32> = within_a_second(stream::iter([7]).paced(&key).collect()).await;
    assert_eq!(items, [7]);
    assert!(start.elapsed() >= FULL_FOR - Duration::from_millis(5));
}

#[tokio::test]
async fn a_paced_sink_on_a_refused_key_goes_on_when_room_appears() {
    let limiter = full_table();
    let key = limiter.key(&1_000);
    let (tx, rx) = futures::channel::mpsc::unbounded::<u32>();
    let mut paced = tx.paced_sink_by(&key, |_| 1);
    within_a_second(async {
        paced.send(7).await.unwrap();
        paced.close().await.unwrap();
    })
    .await;
    assert_eq!(rx.collect::<Vec<_>>().await, [7]);
}

#[tokio::test]
async fn a_paced_writer_on_a_refused_key_goes_on_when_room_appears() {
    let limiter = full_table();
    let key = limiter.key(&1_000);
    let mut out = Vec::new().paced_write(&key);
    within_a_second(out.write_all(&[7])).await.unwrap();
    assert_eq!(out.get_ref(), &[7]);
}
