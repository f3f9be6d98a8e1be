//! Decisions per second of the Redis backend against a `redis-server` it starts itself, beside
//! `redis-benchmark` running the same script as the ceiling; the server time each decision
//! costs beside that of a minimal GCRA script; and the memory a key takes.
//!
//! ```text
//! cargo bench -p cellrate-benches --features redis -- redis             # about 5 minutes
//! REDIS_BENCH_SECS=5 cargo bench -p cellrate-benches --features redis -- redis
//! ```
//!
//! Throughput rows: one hot key, or 100,000 random keys; unpipelined (64 tasks, one call each
//! in flight) or pipelined (`check_many` batches of 64 from 8 tasks). The allowing rows use a
//! quota that earns a token per microsecond with a burst of 10^9; the denying rows one token
//! an hour with a burst of 1, on keys spent before the row (all but about 0.3 % refused). The
//! ceiling is redis-benchmark sending the same EVALSHA with the same arguments (64 clients,
//! `-P 64` when pipelined). The server µs per call of both come from `INFO commandstats`
//! (reset before each run).
//!
//! Server cost rows: redis-benchmark runs each script (100,000 random keys, 32 clients, `-P
//! 32`, 50,000 calls) in turn, 15 short rounds, each starting with the next script: cellrate's
//! decision beside a minimal GCRA script that allows, then both denying (keys spent before),
//! then cellrate's all-or-nothing script on two keys beside a minimal two-key GCRA script,
//! allowing and denying. Per call: the µs in `INFO commandstats` (the time inside the script,
//! which a busy machine inflates whenever it takes the server's core away) and the server's CPU
//! µs from `INFO cpu` (the main thread's user + system time, command parsing and replies
//! included); medians, and the median of the rounds' ratios to the minimal script beside it.
//!
//! Memory rows: `used_memory` before and after 100,000 keys written by the decision script (the
//! TAT alone), and 20,000 keys that carry credit given back (`TAT:G`, written by bookings
//! settled below their cost), per key; beside `MEMORY USAGE` of one such key.

#[path = "../crates/cellrate-redis/tests/redis_support/mod.rs"]
mod redis_support;

use crate::record::{sized, Record};
use cellrate::Quota;
use cellrate_redis::{RedisLimiter, RedisOptions};
use redis_support::RedisServer;

#[path = "redis_cost.rs"]
mod cost;
use cost::{memory_per_key, server_cost};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const KEYS: u64 = 100_000;
const TASKS: usize = 64;
const BATCH: usize = 64;
const BATCH_TASKS: usize = 8;
/// The throughput rows: name, distinct keys, pipelined.
const ROWS: [(&str, u64, bool); 4] = [
    ("one key, 64 tasks", 1, false),
    ("100k random keys, 64 tasks", KEYS, false),
    ("one key, pipelined", 1, true),
    ("100k random keys, pipelined", KEYS, true),
];
/// The denying throughput rows: name, pipelined.
const DENYING_ROWS: [(&str, bool); 2] = [
    ("100k keys denied, 64 tasks", false),
    ("100k keys denied, pipelined", true),
];
/// The allowing quota's arguments (interval µs, burst), and the denying one's.
const ALLOWING: [&str; 2] = ["1", "1000000000"];
const DENYING: [&str; 2] = ["3600000000", "1"];

pub fn main() {
    let secs: f64 = std::env::var("REDIS_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(sized(3.0, 0.5));
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
        .key_prefix("rl:")
        .deadline(Duration::from_secs(5));
    let limiter = rt
        .block_on(RedisLimiter::connect_with(
            &server.url(),
            quota,
            options.clone(),
        ))
        .unwrap();
    let denying = Quota::per_hour(1).with_burst(1);
    let strict = rt
        .block_on(RedisLimiter::connect_with(&server.url(), denying, options))
        .unwrap();
    rt.block_on(limiter.check_key("warm-up")).unwrap(); // loads the script
    let pair = [("warm-up:a", quota), ("warm-up:b", quota)];
    rt.block_on(limiter.check_all_of_n(&pair, 1)).unwrap(); // and the all-or-nothing one
    let sha = limiter.decision_script_sha1().to_owned();

    println!(
        "redis-server on port {}, {secs} s per row, 2 tokio workers",
        server.port
    );
    println!(
        "{:<32} {:>12} {:>12} {:>6} {:>10} {:>10}",
        "workload", "cellrate /s", "ceiling /s", "ratio", "us/call", "ceil us"
    );
    let rows = if std::env::var_os("REDIS_BENCH_COST_ONLY").is_some() {
        &[][..]
    } else {
        &ROWS[..]
    };
    let row = |name: &str, (ours, our_us): (f64, f64), (ceiling, ceiling_us): (f64, f64)| {
        println!(
            "{name:<32} {ours:>12.0} {ceiling:>12.0} {:>5.0}% {our_us:>10.2} {ceiling_us:>10.2}",
            100.0 * ours / ceiling
        );
        Record::new("redis", "throughput")
            .text("name", name)
            .num("cellrate", ours)
            .num("ceiling", ceiling)
            .num("cellrate_us", our_us)
            .num("ceiling_us", ceiling_us)
            .num("secs", secs)
            .write();
    };
    for &(name, keys, pipelined) in rows {
        reset_stats(&server);
        let (ours, allowed) = rt.block_on(measure(&limiter, keys, pipelined, run));
        assert_eq!(allowed, 1.0, "every decision should allow");
        let our_us = usec_per_evalsha(&server);
        reset_stats(&server);
        let key = if keys > 1 {
            "rl:bench:__rand_int__"
        } else {
            "rl:bench:000000000000"
        };
        let args = evalsha(
            &sha,
            &[key],
            &[&ALLOWING[..], &["1", "-1", "0", "0", "0"]].concat(),
        );
        let ceiling = redis_benchmark(&server, &args, keys, pipelined, ours, secs);
        row(name, (ours, our_us), (ceiling, usec_per_evalsha(&server)));
    }
    if !rows.is_empty() {
        // Every key the denying rows use, spent once (1 an hour, burst 1).
        let denied = evalsha(
            &sha,
            &["rl:bench:__rand_int__"],
            &[&DENYING[..], &["1", "-1", "0", "0", "0"]].concat(),
        );
        prefill(&server, &denied);
        for (name, pipelined) in DENYING_ROWS {
            reset_stats(&server);
            let (ours, allowed) = rt.block_on(measure(&strict, KEYS, pipelined, run));
            assert!(allowed < 0.01, "most decisions should deny: {allowed}");
            let our_us = usec_per_evalsha(&server);
            reset_stats(&server);
            let ceiling = redis_benchmark(&server, &denied, KEYS, pipelined, ours, secs);
            row(name, (ours, our_us), (ceiling, usec_per_evalsha(&server)));
        }
    }
    server_cost(&server, &sha, limiter.all_of_script_sha1());
    rt.block_on(memory_per_key(&server, &strict, &sha));
}

/// The arguments of redis-benchmark for EVALSHA `sha` on `keys` with `args`.
fn evalsha(sha: &str, keys: &[&str], args: &[&str]) -> Vec<String> {
    let mut all = vec!["EVALSHA".to_owned(), sha.to_owned(), keys.len().to_string()];
    all.extend(keys.iter().map(|k| k.to_string()));
    all.extend(args.iter().map(|a| a.to_string()));
    all
}

/// Runs `command` on about every one of the 100,000 random keys (600,000 calls: all but
/// e^-6 of them), so that the denying rows find them spent.
fn prefill(server: &RedisServer, command: &[String]) {
    redis_benchmark_n(server, command, KEYS, true, 600_000);
}

/// CPU seconds the server's main thread has used (user + system), from `INFO cpu`: unlike the
/// time in commandstats, it does not grow while the server waits for a core.
fn server_cpu_secs(server: &RedisServer) -> f64 {
    let info: String = server.query(redis::cmd("INFO").arg("cpu")).unwrap();
    ["used_cpu_user_main_thread:", "used_cpu_sys_main_thread:"]
        .iter()
        .filter_map(|field| info.lines().find_map(|l| l.strip_prefix(field)))
        .filter_map(|v| v.trim().parse::<f64>().ok())
        .sum()
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

fn reset_stats(server: &RedisServer) {
    let _: () = server.query(redis::cmd("CONFIG").arg("RESETSTAT")).unwrap();
}

/// `usec_per_call` of EVALSHA since the last reset, from `INFO commandstats`.
fn usec_per_evalsha(server: &RedisServer) -> f64 {
    server.commandstat("evalsha", "usec_per_call")
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
                // As redis-benchmark writes `__rand_int__`: twelve digits.
                format!("bench:{:012}", rng % keys)
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

/// redis-benchmark's requests per second for `command`, sized to run about `secs`.
fn redis_benchmark(
    server: &RedisServer,
    command: &[String],
    keys: u64,
    pipelined: bool,
    guess: f64,
    secs: f64,
) -> f64 {
    let n = ((guess * 1.3 * secs) as u64).max(10_000);
    let (clients, pipeline) = if pipelined { (64, BATCH) } else { (64, 1) };
    run_benchmark(server, command, keys, clients, pipeline, n)
}

/// redis-benchmark's requests per second for `n` calls of `command`, 32 clients, `-P 32`
/// when pipelined.
fn redis_benchmark_n(
    server: &RedisServer,
    command: &[String],
    keys: u64,
    pipelined: bool,
    n: u64,
) -> f64 {
    let pipeline = if pipelined { 32 } else { 1 };
    run_benchmark(server, command, keys, 32, pipeline, n)
}

fn run_benchmark(
    server: &RedisServer,
    command: &[String],
    keys: u64,
    clients: usize,
    pipeline: usize,
    n: u64,
) -> f64 {
    let port = server.port.to_string();
    let mut cmd = Command::new("redis-benchmark");
    cmd.args([
        "-p",
        &port,
        "-c",
        &clients.to_string(),
        "-n",
        &n.to_string(),
        "--csv",
    ]);
    cmd.args(["-P", &pipeline.to_string()]);
    if keys > 1 {
        cmd.args(["-r", &keys.to_string()]);
    }
    cmd.args(command);
    let out = cmd.output().expect("run redis-benchmark");
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text.lines().last().unwrap_or_default();
    let rps = row.split(',').nth(1).unwrap_or_default().trim_matches('"');
    rps.parse()
        .unwrap_or_else(|_| panic!("unexpected redis-benchmark output: {text}"))
}
