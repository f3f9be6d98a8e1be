//! `pace` on the real clock: achieved rates within 1% of the quota, judged on the time the
//! machine gave the pacer. Its own test binary, so that no other test's threads compete for
//! the cores while it measures. How two writers share a limit is `pace_write.rs`'s, on a
//! manual clock.
#![cfg(feature = "async")]

use cellrate::pace::PaceExt;
use cellrate::{Limiter, Quota};
use futures::executor::block_on;
use futures::io::AsyncWriteExt;
use futures::{stream, SinkExt, StreamExt};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the threads that drive a pacer here have waited for a core so far: this thread,
/// which polls it, and futures-timer's, which wakes it (the second field of each one's
/// `/proc/.../schedstat`, the time it was runnable but not running). Zero where Linux does not
/// tell.
fn waited_for_a_core() -> Duration {
    let run_delay = |path: &std::path::Path| -> u64 {
        let stat = std::fs::read_to_string(path).unwrap_or_default();
        stat.split_whitespace()
            .nth(1)
            .and_then(|ns| ns.parse().ok())
            .unwrap_or(0)
    };
    let mut ns = run_delay("/proc/thread-self/schedstat".as_ref());
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() == "futures-timer" {
            ns += run_delay(&task.path().join("schedstat"));
        }
    }
    Duration::from_nanos(ns)
}

/// One paced run: the units handed on after the burst, in how long, of which how long the
/// pacer's threads waited for a core.
struct Run {
    after_burst: u64,
    elapsed: Duration,
    waited: Duration,
}

impl Run {
    /// Times `pace`, which hands on `units` units of a quota of burst `burst`.
    fn measure(units: u64, burst: u64, pace: impl FnOnce()) -> Run {
        let (start, waited) = (Instant::now(), waited_for_a_core());
        pace();
        Run {
            after_burst: units - burst,
            elapsed: start.elapsed(),
            waited: waited_for_a_core().saturating_sub(waited),
        }
    }

    /// Units per second over the whole run.
    fn rate(&self) -> f64 {
        self.after_burst as f64 / self.elapsed.as_secs_f64()
    }

    /// Units per second over the time the machine gave the pacer: the run less its threads'
    /// waits for a core. A waker or poller kept off the cores makes the pacer late, as it
    /// would any token bucket's user, and the time it loses is at most that wait (less where
    /// the burst makes up for it); a pacer that sleeps longer than the limiter asks loses
    /// time that no such wait accounts for.
    fn rate_given_the_cores(&self) -> f64 {
        let given = self.elapsed.saturating_sub(self.waited);
        self.after_burst as f64 / given.as_secs_f64()
    }
}

/// Held by the test measuring: one at a time, since futures-timer's thread, which they share,
/// would count one test's waits for a core in another's.
static MEASURING: Mutex<()> = Mutex::new(());

/// Runs `attempt` until one is within 1% of `expected` on the time its threads were given, at
/// most three times. No run may be faster than the quota over its whole time: a timer never
/// ends early, so a loaded machine can only make a run slower, and faster is the pacer's fault.
fn assert_within_1_percent(expected: f64, mut attempt: impl FnMut() -> Run) {
    let _alone = MEASURING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut runs = Vec::new();
    for _ in 0..3 {
        let run = attempt();
        assert!(
            run.rate() <= expected * 1.001,
            "achieved {:.1}/s against {expected}/s",
            run.rate()
        );
        let judged = run.rate_given_the_cores();
        runs.push(format!(
            "{judged:.1}/s ({:.1}/s over {:?}, of which {:?} waiting for a core)",
            run.rate(),
            run.elapsed,
            run.waited
        ));
        if judged >= expected * 0.99 {
            return;
        }
    }
    panic!("achieved {runs:?} against {expected}/s");
}

#[test]
fn a_paced_stream_keeps_the_quota_rate() {
    assert_within_1_percent(1_000.0, || {
        let limiter = Limiter::new(Quota::per_second(1_000).with_burst(10));
        Run::measure(2_010, 10, || {
            let count = block_on(stream::iter(0..2_010).paced(&limiter).count());
            assert_eq!(count, 2_010);
        })
    });
}

#[test]
fn a_paced_writer_keeps_the_byte_rate() {
    assert_within_1_percent(100_000.0, || {
        let limiter = Arc::new(Limiter::new(Quota::per_second(100_000).with_burst(1_000)));
        let mut out = Vec::new().paced_write(limiter);
        let run = Run::measure(201_000, 1_000, || {
            block_on(async {
                for _ in 0..201 {
                    out.write_all(&[7u8; 1_000]).await.unwrap();
                }
                out.flush().await.unwrap();
            })
        });
        assert_eq!(out.get_ref().len(), 201_000);
        run
    });
}

#[test]
fn a_paced_sink_forwards_every_item_in_order_at_the_rate() {
    assert_within_1_percent(500.0, || {
        let limiter = Limiter::new(Quota::per_second(500).with_burst(5));
        let (tx, rx) = futures::channel::mpsc::unbounded::<u32>();
        let mut paced = tx.paced_sink_by(&limiter, |&n: &u32| n);
        let run = Run::measure(1_005, 5, || {
            block_on(async {
                for n in [1, 2, 2] {
                    paced.send(n).await.unwrap();
                }
                for _ in 0..1_000 {
                    paced.send(1).await.unwrap();
                }
                paced.close().await.unwrap();
            })
        });
        let got: Vec<u32> = block_on(rx.collect());
        assert_eq!(got.len(), 1_003);
        assert_eq!(&got[..3], &[1, 2, 2]);
        run
    });
}
