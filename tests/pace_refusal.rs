//! `pace`: a paced stream, sink or writer on a key that a full `DenyNewKeys` table refuses is
//! woken once the refusal's time has passed, and goes on when room appears (real clock, real
//! executor).
#![cfg(feature = "async")]

use crate::common::decision_time;
use cellrate::pace::PaceExt;
use cellrate::{KeyedLimiter, Nanos, OverflowPolicy, Quota};
use futures::io::AsyncWriteExt;
use futures::{stream, SinkExt, StreamExt};
use std::time::Duration;

/// The table's quota, 20 a second with a burst of 1: a key filled now stays unreclaimable for
/// `FULL_FOR`, until its one token is back.
fn quota() -> Quota {
    Quota::per_second(20).with_burst(1)
}
const FULL_FOR: Duration = Duration::from_millis(50);

/// A table of 8 keys whose slots are all held by keys just spent, so that a new key is
/// refused for lack of room until they are full again, `FULL_FOR` after the second value
/// returned (a reading of the limiter's time from before it filled them). A loaded machine can
/// keep this thread off the cores until they are full again before it sees a new key refused;
/// the table is then filled again, up to 10 times.
fn full_table() -> (KeyedLimiter<u64>, Nanos) {
    for _ in 0..10 {
        let limiter = KeyedLimiter::<u64>::builder(quota())
            .max_keys(8)
            .overflow(OverflowPolicy::DenyNewKeys)
            .build();
        let filled = decision_time(limiter.clock(), &quota());
        for key in 0..limiter.capacity() as u64 + 2 {
            let _ = limiter.check_key(&key);
        }
        if limiter.key(&1_000).reserve(1, Duration::ZERO).is_err() {
            return (limiter, filled);
        }
    }
    panic!("the table had room for a new key in each of 10 tries");
}

/// Runs `work` under a timeout far above the time room takes to appear (40 times it: room
/// comes when the limiter's time says, and a loaded machine delays it by its stalls alone).
async fn within_a_second<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(2), work)
        .await
        .expect("the adapter was woken when room appeared")
}

#[tokio::test]
async fn a_paced_stream_on_a_refused_key_goes_on_when_room_appears() {
    let (limiter, filled) = full_table();
    let key = limiter.key(&1_000);
    let items: Vec<u32> = within_a_second(stream::iter([7]).paced(&key).collect()).await;
    assert_eq!(items, [7]);
    // Not before room, by the limiter's own time.
    let room = filled.saturating_add(FULL_FOR);
    assert!(decision_time(limiter.clock(), &quota()) >= room);
}

#[tokio::test]
async fn a_paced_sink_on_a_refused_key_goes_on_when_room_appears() {
    let (limiter, _) = full_table();
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
    let (limiter, _) = full_table();
    let key = limiter.key(&1_000);
    let mut out = Vec::new().paced_write(&key);
    within_a_second(out.write_all(&[7])).await.unwrap();
    assert_eq!(out.get_ref(), &[7]);
}
