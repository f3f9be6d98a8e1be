//! Decisions per second of the Redis backend against a `redis-server` it starts itself, beside
//! `redis-benchmark` running the same script as the ceiling.
//!
//! ```text
//! cargo bench -p cellrate-benches --features redis -- redis             # about 30 s
//! REDIS_BENCH_SECS=5 cargo bench -p cellrate-benches --features redis -- redis
//! ```
//!
//! Rows: one hot key, or 100,000 random keys; unpipelined (64 tasks, one call each in flight)
//! or pipelined (`check_many` batches of 64 from 8 tasks). Every decision allows: the quota
//! earns a token per microsecond with a burst of 10^9. The ceiling is redis-benchmark sending
//! the same EVALSHA with the same arguments (64 clients, `-P 64` when pipelined).

#[path = "../tests/redis_support/mod.rs"]
mod redis_support;

use cellrate::redis::{RedisLimiter, RedisOptions};
use cellrate::Quota;
use redis_support::RedisServer;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const KEYS: u64 = 100_000;
const TASKS: usize = 64;
const BATCH: usize = 64;
const BATCH_TASKS: usize = 8;

pub fn main() {
    let secs: f64 = std::env::var("REDIS_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let run = Duration::from_secs_f64(secs);
    let Some(server) = RedisServer::start("benches/redis") else {
        return;
    };
    if Command::new("redis-benchmark")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED benches/redis: no redis-benchmark on PATH (Debian: redis-tools)");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let quota = Quota::try_new(Duration::from_micros(1), 1_000_000_000).unwrap();
    let options = RedisOptions::default()
        .key_prefix("")
        .deadline(Duration::from_secs(5));
    let limiter = rt
        .block_on(RedisLimiter::connect_with(&server.url(), quota, options))
        .unwrap();
    rt.block_on(limiter.check_key("warm-up")).unwrap(); // loads the script
    let sha = limiter.decision_script_sha1().to_owned();

    println!(
        "redis-server on port {}, {secs} s per row, 2 tokio workers",
        server.port
    );
    println!(
        "{:<32} {:>14} {:>14} {:>9}",
        "workload", "cellrate /s", "ceiling /s", "ratio"
    );
    for (name, keys, pipelined) in [
        ("one key, 64 tasks", 1, false),
        ("100k random keys, 64 tasks", KEYS, false),
        ("one key, pipelined", 1, true),
        ("100k random keys, pipelined", KEYS, true),
    ] {
        let (ours, allowed) = rt.block_on(measure(&limiter, keys, pipelined, run));
        assert_eq!(allowed, 1.0, "every decision should allow");
        let ceiling = redis_benchmark(&server, &sha, keys, pipelined, ours, secs);
        println!(
            "{name:<32} {ours:>14.0} {ceiling:>14.0} {:>8.0}%",
            100.0 * ours / ceiling
        );
    }
}

/// Decisions per second and the fraction that allowed.
async fn measure(limiter: &RedisLimiter, keys: u64, pipelined: bool, run: Duration) -> (f64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let before = limiter.stats();
    let tasks = if pipelined { BATCH_TASKS } else { TASKS };
    let mut handles = Vec::new();
    for task in 0..tasks {
        let (limiter, stop, done) = (limiter.clone(), stop.clone(), done.clone());
        handles.push(tokio::spawn(async move {
            let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (task as u64 + 1);
            let mut key = move || {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                format!("bench:{}", rng % keys)
            };
            while !stop.load(Ordering::Relaxed) {
                if pipelined {
                    let names: Vec<String> = (0..BATCH).map(|_| key()).collect();
                    let batch: Vec<(&str, u32)> = names.iter().map(|k| (k.as_str(), 1)).collect();
                    limiter.check_many(&batch).await;
                    done.fetch_add(BATCH as u64, Ordering::Relaxed);
                } else {
                    let _ = limiter.check_key(&key()).await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let started = Instant::now();
    tokio::time::sleep(run).await;
    stop.store(true, Ordering::Relaxed);
    for handle in handles {
        handle.await.unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let after = limiter.stats();
    let decided = (after.allowed + after.denied) - (before.allowed + before.denied);
    let allowed = (after.allowed - before.allowed) as f64 / decided as f64;
    (done.load(Ordering::Relaxed) as f64 / elapsed, allowed)
}

/// redis-benchmark's requests per second for the same EVALSHA, sized to run about `secs`.
fn redis_benchmark(
    server: &RedisServer,
    sha: &str,
    keys: u64,
    pipelined: bool,
    guess: f64,
    secs: f64,
) -> f64 {
    let n = ((guess * 1.3 * secs) as u64).max(10_000).to_string();
    let port = server.port.to_string();
    let mut cmd = Command::new("redis-benchmark");
    cmd.args(["-p", &port, "-c", "64", "-n", &n, "--csv"]);
    if pipelined {
        cmd.args(["-P", &BATCH.to_string()]);
    }
    let key = if keys > 1 {
        cmd.args(["-r", &keys.to_string()]);
        "bench:__rand_int__"
    } else {
        "bench:0"
    };
    // interval 1 us, burst 10^9, cost 1, server time, start full, no extra lifetime
    cmd.args([
        "EVALSHA",
        sha,
        "1",
        key,
        "1",
        "1000000000",
        "1",
        "-1",
        "0",
        "0",
    ]);
    let out = cmd.output().expect("run redis-benchmark");
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text.lines().last().unwrap_or_default();
    let rps = row.split(',').nth(1).unwrap_or_default().trim_matches('"');
    rps.parse()
        .unwrap_or_else(|_| panic!("unexpected redis-benchmark output: {text}"))
}
