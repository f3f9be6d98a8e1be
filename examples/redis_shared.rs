//! Two "API servers" (tasks with separate Redis connections) share one limit kept in Redis.
//!
//! ```text
//! redis-server --port 6379 &      # or any Redis; this example starts nothing itself
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --release --example redis_shared --features redis
//! ```
//!
//! Each server offers 300 requests per second for two seconds against a shared quota of 100
//! per second with a burst of 20; together they are admitted at most 20 + 100 per second.
//! Should Redis become unreachable mid-run (stop it to see), each server falls back to a local
//! limiter with half the quota, and the stats count those answers apart.

use cellrate::Quota;
use cellrate_redis::{FailurePolicy, RedisLimiter, RedisOptions};
use std::time::{Duration, Instant};

const RATE: u32 = 100;
const BURST: u32 = 20;
const OFFERED_PER_SERVER: u32 = 300;
const RUN: Duration = Duration::from_secs(2);

#[tokio::main]
async fn main() {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let quota = Quota::per_second(RATE).with_burst(BURST);
    // A key of this run only, so that an earlier run's bucket does not count.
    let key = format!("example:{}:{}", std::process::id(), unix_micros());
    let options = RedisOptions::default()
        .deadline(Duration::from_millis(500))
        .failure_policy(FailurePolicy::Local { servers: 2 });

    // From before the first request to after the last: the window the bound applies to.
    let started = Instant::now();
    let mut servers = Vec::new();
    for name in ["server A", "server B"] {
        let limiter = match RedisLimiter::connect_with(&url, quota, options.clone()).await {
            Ok(limiter) => limiter,
            Err(e) => {
                eprintln!("cannot reach Redis at {url}: {e}");
                eprintln!("start one (redis-server) or set REDIS_URL=redis://host:port");
                std::process::exit(1);
            }
        };
        let key = key.clone();
        servers.push(tokio::spawn(async move {
            let gap = Duration::from_secs(1) / OFFERED_PER_SERVER;
            let mut tick = tokio::time::interval(gap);
            let started = Instant::now();
            let (mut offered, mut admitted) = (0u32, 0u32);
            while started.elapsed() < RUN {
                tick.tick().await;
                offered += 1;
                if limiter.check_key(&key).await.is_ok() {
                    admitted += 1;
                }
            }
            (name, offered, admitted, limiter.stats())
        }));
    }

    let mut total = 0;
    for server in servers {
        let (name, offered, admitted, stats) = server.await.expect("server task");
        println!("{name}: offered {offered}, admitted {admitted}  ({stats:?})");
        total += admitted;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let bound = f64::from(BURST) + f64::from(RATE) * elapsed;
    println!(
        "together: admitted {total} in {elapsed:.2} s; the shared limit allows at most \
         {BURST} + {RATE}/s x {elapsed:.2} s = {bound:.0}"
    );
    if f64::from(total) <= bound {
        println!("within the limit: the two servers shared one bucket");
    } else {
        println!("OVER THE LIMIT");
        std::process::exit(2);
    }
}

fn unix_micros() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}
