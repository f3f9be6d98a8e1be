//! Decisions per second of the Redis backend against a `redis-server` it starts itself, beside
//! `redis-benchmark` running the same script as the ceiling, and the server time each
//! decision costs beside that of a minimal GCRA script and of a trivial one.
//!
//! ```text
//! cargo bench -p cellrate-benches --features redis -- redis             # about 45 s
//! REDIS_BENCH_SECS=5 cargo bench -p cellrate-benches --features redis -- redis
//! ```
//!
//! Throughput rows: one hot key, or 100,000 random keys; unpipelined (64 tasks, one call each
//! in flight) or pipelined (`check_many` batches of 64 from 8 tasks). Every decision allows:
//! the quota earns a token per microsecond with a burst of 10^9. The ceiling is redis-benchmark
//! sending the same EVALSHA with the same arguments (64 clients, `-P 64` when pipelined). The
//! server µs per call of both come from `INFO commandstats` (reset before each run).
//!
//! Server cost rows: redis-benchmark runs each script (100,000 random keys, 64 clients, `-P
//! 64`, 50,000 calls) in turn, 15 short rounds, each starting with the next script. Per call:
//! the µs in `INFO commandstats` (the time inside the script, which a busy machine inflates
//! whenever it takes the server's core away) and the server's CPU µs from `INFO cpu` (the main
//! thread's user + system time, command parsing and replies included); medians, and the median
//! of the rounds' ratios to the minimal script (the three run side by side in each round).

#[path = "../tests/redis_support/mod.rs"]
mod redis_support;

use crate::record::{sized, Record};
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
/// The throughput rows: name, distinct keys, pipelined.
const ROWS: [(&str, u64, bool); 4] = [
    ("one key, 64 tasks", 1, false),
    ("100k random keys, 64 tasks", KEYS, false),
    ("one key, pipelined", 1, true),
    ("100k random keys, pipelined", KEYS, true),
];

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
        "{:<32} {:>12} {:>12} {:>6} {:>10} {:>10}",
        "workload", "cellrate /s", "ceiling /s", "ratio", "us/call", "ceil us"
    );
    let rows = if std::env::var_os("REDIS_BENCH_COST_ONLY").is_some() {
        &[][..]
    } else {
        &ROWS[..]
    };
    for &(name, keys, pipelined) in rows {
        reset_stats(&server);
        let (ours, allowed) = rt.block_on(measure(&limiter, keys, pipelined, run));
        assert_eq!(allowed, 1.0, "every decision should allow");
        let our_us = usec_per_evalsha(&server);
        reset_stats(&server);
        let ceiling = redis_benchmark(&server, &sha, keys, pipelined, ours, secs);
        let ceiling_us = usec_per_evalsha(&server);
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
    }
    server_cost(&server, &sha);
}

/// A minimal GCRA script for comparison: TIME, GET, SET PX, no validation. Same arguments.
const MINIMAL_LUA: &str = r#"
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new = tat + tonumber(ARGV[3]) * interval
if new - now > burst * interval then return {0, tat - now} end
redis.call('SET', KEYS[1], string.format('%d', new), 'PX', math.ceil((new - now) / 1000))
return {1, new - now}
"#;

/// Rounds of the server cost table.
fn rounds() -> usize {
    sized(15, 2)
}

/// Calls per script and round of the server cost table.
fn calls() -> f64 {
    sized(50_000.0, 10_000.0)
}

/// Server µs per call of the decision script, the minimal GCRA script and `return 1`, run by
/// redis-benchmark in turn for [`rounds`] rounds.
fn server_cost(server: &RedisServer, sha: &str) {
    let load = |body: &str| -> String {
        server
            .query(redis::cmd("SCRIPT").arg("LOAD").arg(body))
            .unwrap()
    };
    let scripts = [
        ("cellrate decision", sha.to_owned()),
        ("minimal GCRA", load(MINIMAL_LUA)),
        ("return 1", load("return 1")),
    ];
    println!(
        "\nserver us per call, 100k random keys, redis-benchmark -c 64 -P 64, {} calls",
        calls()
    );
    println!(
        "{:<20} {:>10} {:>10} {:>12} {:>10} {:>36}",
        "script",
        "median us",
        "x minimal",
        "server CPU",
        "x minimal",
        "rounds (us in commandstats)"
    );
    // Per script: (µs per call in commandstats, server CPU µs per call) for each round.
    let mut table = vec![Vec::new(); scripts.len()];
    for round in 0..rounds() {
        // Each round starts with another script, so that none always runs first.
        for i in (0..scripts.len()).map(|k| (k + round) % scripts.len()) {
            let sha = &scripts[i].1;
            reset_stats(server);
            let cpu = server_cpu_secs(server);
            redis_benchmark(server, sha, KEYS, true, calls() / 1.3, 1.0);
            let cpu = server_cpu_secs(server) - cpu;
            let calls = server.commandstat("evalsha", "calls");
            table[i].push((usec_per_evalsha(server), cpu * 1e6 / calls));
        }
    }
    let minimal = &table[1];
    for (i, (name, _)) in scripts.iter().enumerate() {
        let row = &table[i];
        let us: Vec<f64> = row.iter().map(|r| r.0).collect();
        let cpu: Vec<f64> = row.iter().map(|r| r.1).collect();
        let ratio = |f: fn(&(f64, f64)) -> f64| {
            let per_round: Vec<f64> = row.iter().zip(minimal).map(|(r, m)| f(r) / f(m)).collect();
            median(&per_round)
        };
        let rounds: Vec<String> = us.iter().map(|v| format!("{v:.2}")).collect();
        println!(
            "{name:<20} {:>10.2} {:>9.2}x {:>12.2} {:>9.2}x   {}",
            median(&us),
            ratio(|r| r.0),
            median(&cpu),
            ratio(|r| r.1),
            rounds.join(" ")
        );
        Record::new("redis", "server_cost")
            .text("name", name)
            .num("us", median(&us))
            .num("us_ratio", ratio(|r| r.0))
            .num("cpu_us", median(&cpu))
            .num("cpu_ratio", ratio(|r| r.1))
            .nums("rounds", &us)
            .num("calls", calls())
            .write();
    }
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
    // interval 1 us, burst 10^9, cost 1, server time, start full, no extra lifetime, no
    // fraction of a microsecond
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
        "0",
    ]);
    let out = cmd.output().expect("run redis-benchmark");
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text.lines().last().unwrap_or_default();
    let rps = row.split(',').nth(1).unwrap_or_default().trim_matches('"');
    rps.parse()
        .unwrap_or_else(|_| panic!("unexpected redis-benchmark output: {text}"))
}
