//! Pacing outgoing calls to an upstream API that allows 10 requests per second (burst 3):
//! eight async workers share one limiter and await their turn (`until_ready`) instead of
//! being refused, so the upstream never sees more than its limit and no worker polls.
//!
//! ```sh
//! cargo run --release --example pacing --features async
//! ```
//!
//! Each worker makes 5 calls. The first 3 of the 40 go at once (the burst), then one every
//! 100 ms, in the order they were asked for: about 3.7 s in all. A call that would have to
//! wait more than `MAX_WAIT` is refused at once instead (here: never).

use cellrate::{Limiter, Quota};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WORKERS: u32 = 8;
const CALLS_PER_WORKER: u32 = 5;
/// The longest a call agrees to wait for its turn.
const MAX_WAIT: Duration = Duration::from_secs(10);

/// Stands for the call to the upstream API.
async fn call_upstream(worker: u32, call: u32, started: Instant) {
    println!(
        "{:>6.3} s  worker {worker} call {call}",
        started.elapsed().as_secs_f64()
    );
}

#[tokio::main]
async fn main() {
    let upstream = Arc::new(Limiter::new(Quota::per_second(10).with_burst(3)));
    let started = Instant::now();
    let mut workers = Vec::new();
    for worker in 0..WORKERS {
        let upstream = Arc::clone(&upstream);
        workers.push(tokio::spawn(async move {
            for call in 0..CALLS_PER_WORKER {
                // Books a place in line and sleeps until it is due (an executor-independent
                // timer: no tokio needed by the limiter itself).
                match upstream.until_ready(1, MAX_WAIT).await {
                    Ok(_) => call_upstream(worker, call, started).await,
                    Err(denied) => println!("worker {worker}: gave up ({denied:?})"),
                }
            }
        }));
    }
    for worker in workers {
        worker.await.expect("a worker panicked");
    }
    let took = started.elapsed().as_secs_f64();
    let calls = WORKERS * CALLS_PER_WORKER;
    println!("{calls} calls in {took:.2} s (the limit allows 3 + 10 per second)");
}
