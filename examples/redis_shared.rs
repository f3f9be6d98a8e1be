//! Two "API servers" (tasks with separate Redis connections) share one limit kept in Redis.
//!
//! ```text
//! redis-server --port 6379 &      # or any Redis; this example starts nothing itself
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --release --example redis_shared --features redis
//! ```
//!
//! Each server offers 300 requests per second for two seconds against a shared quota of 100
//! per second with a burst of 20; together Redis admits at most 20 + 100 per second. Stop
//! Redis mid-run to see the failure policy: each server then falls back to a local limiter
//! with its half of the quota, and the bound printed grows by what that fallback allows (its
//! buckets start full: one more burst; and a burst more if Redis comes back, its bucket having
//! refilled meanwhile). Each answer says who gave it, and the counts are printed apart.

use cellrate::Quota;
use cellrate_redis::{FailurePolicy, RedisLimiter, RedisOptions, Source};
use std::time::{Duration, Instant};

const RATE: u32 = 100;
const BURST: u32 = 20;
const SERVERS: u32 = 2;
const OFFERED_PER_SERVER: u32 = 300;
const RUN: Duration = Duration::from_secs(2);

/// What one server saw: requests offered, admitted by Redis and by the local fallback, and
/// whether it fell back and whether Redis decided again after that.
#[derive(Default)]
struct Tally {
    offered: u32,
    by_redis: u32,
    by_fallback: u32,
    fell_back: bool,
    came_back: bool,
}

#[tokio::main]
async fn main() {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let quota = Quota::per_second(RATE).with_burst(BURST);
    // A key of this run only, so that an earlier run's bucket does not count.
    let key = format!("example:{}:{}", std::process::id(), unix_micros());
    let options = RedisOptions::default()
        .deadline(Duration::from_millis(500))
        .failure_policy(FailurePolicy::Local { servers: SERVERS });

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
            let mut tally = Tally::default();
            while started.elapsed() < RUN {
                tick.tick().await;
                tally.offered += 1;
                let answer = limiter.check_key_n_answer(&key, 1, &quota).await;
                let admitted = u32::from(answer.decision.is_ok());
                match answer.source {
                    Source::Redis => {
                        tally.by_redis += admitted;
                        tally.came_back |= tally.fell_back;
                    }
                    _ => {
                        tally.by_fallback += admitted;
                        tally.fell_back = true;
                    }
                }
            }
            (name, tally, limiter.stats())
        }));
    }

    let (mut by_redis, mut by_fallback) = (0, 0);
    let (mut fell_back, mut came_back) = (false, false);
    for server in servers {
        let (name, tally, stats) = server.await.expect("server task");
        println!(
            "{name}: offered {}, admitted {} by Redis and {} by its fallback  ({stats:?})",
            tally.offered, tally.by_redis, tally.by_fallback
        );
        by_redis += tally.by_redis;
        by_fallback += tally.by_fallback;
        fell_back |= tally.fell_back;
        came_back |= tally.came_back;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let total = by_redis + by_fallback;
    // Redis's bucket admits at most BURST + RATE per second over the run. While Redis gives no
    // decision, each server's local bucket (its share: BURST / SERVERS, RATE / SERVERS per
    // second) starts full, so the fallbacks together add at most one burst beyond the rate;
    // and when Redis comes back, its bucket has refilled during the outage: one burst more.
    let extra_bursts = u32::from(fell_back) + u32::from(came_back);
    let bound = f64::from(BURST) * f64::from(1 + extra_bursts) + f64::from(RATE) * elapsed;
    println!(
        "together: admitted {total} ({by_redis} by Redis, {by_fallback} by the fallbacks) in \
         {elapsed:.2} s"
    );
    let mut extra = String::new();
    if fell_back {
        extra += &format!(" + {BURST} (the fallbacks' buckets start full)");
    }
    if came_back {
        extra += &format!(" + {BURST} (Redis's bucket refilled while Redis was away)");
    }
    println!("the limit allows at most {BURST} + {RATE}/s x {elapsed:.2} s{extra} = {bound:.0}");
    println!(
        "(a shared limit bounds the sum, not each server's part: a token goes to whichever \
         request reaches Redis first once it is earned, and two servers offering at the same \
         steady pace keep the same order against the tokens, so one may take most of them)"
    );
    if f64::from(total) <= bound {
        println!("within the limit");
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
