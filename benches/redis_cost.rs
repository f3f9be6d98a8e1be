//! The redis suite's server-side tables: server time per call of cellrate's scripts beside
//! minimal GCRA scripts, allowing and denying, and the memory a key takes.

use super::{evalsha, median, prefill, redis_benchmark_n, reset_stats, server_cpu_secs};
use super::{usec_per_evalsha, RedisServer, ALLOWING, DENYING, KEYS};
use crate::record::{sized, Record};
use cellrate::Quota;
use cellrate_redis::RedisLimiter;

/// A minimal GCRA script for comparison: TIME, GET, SET PX, no validation. Same first three
/// arguments as the decision (interval µs, burst, cost).
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

/// The same on two keys, all or nothing: interval µs, burst and cost shared by both.
const MINIMAL_TWO_LUA: &str = r#"
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local news = {}
for i = 1, 2 do
  local tat = tonumber(redis.call('GET', KEYS[i])) or now
  if tat < now then tat = now end
  local new = tat + cost * interval
  if new - now > burst * interval then return {0, i, tat - now} end
  news[i] = new
end
for i = 1, 2 do
  redis.call('SET', KEYS[i], string.format('%d', news[i]), 'PX', math.ceil((news[i] - now) / 1000))
end
return {1, news[1] - now, news[2] - now}
"#;

/// Rounds of the server cost table.
fn rounds() -> usize {
    sized(15, 2)
}

/// Calls per script and round of the server cost table.
fn calls() -> u64 {
    sized(50_000, 10_000)
}

/// Server µs per call of cellrate's scripts beside minimal ones, allowing and denying, run by
/// redis-benchmark in turn for [`rounds`] rounds.
pub(super) fn server_cost(server: &RedisServer, sha: &str, all_of: &str) {
    let load = |body: &str| -> String {
        server
            .query(redis::cmd("SCRIPT").arg("LOAD").arg(body))
            .unwrap()
    };
    let (minimal, minimal_two) = (load(MINIMAL_LUA), load(MINIMAL_TWO_LUA));
    fn one(quota: [&'static str; 2]) -> Vec<&'static str> {
        [&quota[..], &["1", "-1", "0", "0", "0"]].concat()
    }
    fn both(quota: [&'static str; 2]) -> Vec<&'static str> {
        [&["1", "-1", "0", "0", "0"], &quota[..], &quota[..]].concat()
    }
    fn plain(quota: [&'static str; 2]) -> Vec<&'static str> {
        [&quota[..], &["1"]].concat()
    }
    let x = ["rl:x:__rand_int__", "rl:y:__rand_int__"];
    let m = ["rl:mx:__rand_int__", "rl:my:__rand_int__"];
    // (name, the command, spent before the rounds), in pairs: cellrate's, then the minimal one.
    let scripts = [
        (
            "decision, allowed",
            evalsha(sha, &["rl:a:__rand_int__"], &one(ALLOWING)),
            false,
        ),
        (
            "minimal, allowed",
            evalsha(&minimal, &["rl:ma:__rand_int__"], &plain(ALLOWING)),
            false,
        ),
        (
            "decision, denied",
            evalsha(sha, &["rl:d:__rand_int__"], &one(DENYING)),
            true,
        ),
        (
            "minimal, denied",
            evalsha(&minimal, &["rl:md:__rand_int__"], &plain(DENYING)),
            true,
        ),
        (
            "all_of 2 keys, allowed",
            evalsha(all_of, &x, &both(ALLOWING)),
            false,
        ),
        (
            "minimal 2 keys, allowed",
            evalsha(&minimal_two, &m, &plain(ALLOWING)),
            false,
        ),
        (
            "all_of 2 keys, denied",
            evalsha(
                all_of,
                &["rl:u:__rand_int__", "rl:v:__rand_int__"],
                &both(DENYING),
            ),
            true,
        ),
        (
            "minimal 2 keys, denied",
            evalsha(
                &minimal_two,
                &["rl:mu:__rand_int__", "rl:mv:__rand_int__"],
                &plain(DENYING),
            ),
            true,
        ),
    ];
    for (_, command, spent) in &scripts {
        if *spent {
            prefill(server, command);
        }
    }
    println!(
        "\nserver us per call, 100k random keys, redis-benchmark -c 32 -P 32, {} calls, {} rounds",
        calls(),
        rounds()
    );
    println!(
        "{:<26} {:>10} {:>10} {:>12} {:>10} {:>9}  rounds (us in commandstats)",
        "script", "median us", "x minimal", "server CPU", "x minimal", "allowed"
    );
    // Per script: (µs per call in commandstats, server CPU µs per call, allowed share) for
    // each round.
    let mut table = vec![Vec::new(); scripts.len()];
    for round in 0..rounds() {
        // Each round starts with another script, so that none always runs first.
        for i in (0..scripts.len()).map(|k| (k + round) % scripts.len()) {
            reset_stats(server);
            let cpu = server_cpu_secs(server);
            redis_benchmark_n(server, &scripts[i].1, KEYS, true, calls());
            let cpu = server_cpu_secs(server) - cpu;
            let calls = server.commandstat("evalsha", "calls");
            let writes = server.commandstat("set", "calls");
            let keys_per_call = scripts[i].1[2].parse::<f64>().unwrap();
            table[i].push((
                usec_per_evalsha(server),
                cpu * 1e6 / calls,
                writes.max(0.0) / calls / keys_per_call,
            ));
        }
    }
    for (i, (name, _, _)) in scripts.iter().enumerate() {
        let row = &table[i];
        // The minimal script of the pair.
        let minimal = &table[i | 1];
        let us: Vec<f64> = row.iter().map(|r| r.0).collect();
        let cpu: Vec<f64> = row.iter().map(|r| r.1).collect();
        let allowed: Vec<f64> = row.iter().map(|r| r.2).collect();
        let ratio = |f: fn(&(f64, f64, f64)) -> f64| {
            let per_round: Vec<f64> = row.iter().zip(minimal).map(|(r, m)| f(r) / f(m)).collect();
            median(&per_round)
        };
        let rounds: Vec<String> = us.iter().map(|v| format!("{v:.2}")).collect();
        println!(
            "{name:<26} {:>10.2} {:>9.2}x {:>12.2} {:>9.2}x {:>8.1}%  {}",
            median(&us),
            ratio(|r| r.0),
            median(&cpu),
            ratio(|r| r.1),
            100.0 * median(&allowed),
            rounds.join(" ")
        );
        Record::new("redis", "server_cost")
            .text("name", name)
            .num("us", median(&us))
            .num("us_ratio", ratio(|r| r.0))
            .num("cpu_us", median(&cpu))
            .num("cpu_ratio", ratio(|r| r.1))
            .num("allowed", median(&allowed))
            .nums("rounds", &us)
            .num("calls", calls() as f64)
            .write();
    }
}

/// `used_memory` of the server, from `INFO memory`.
fn used_memory(server: &RedisServer) -> f64 {
    let info: String = server.query(redis::cmd("INFO").arg("memory")).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

fn dbsize(server: &RedisServer) -> f64 {
    server.query::<u64>(&mut redis::cmd("DBSIZE")).unwrap() as f64
}

/// `used_memory` growth per key: keys written by the decision script, and keys that carry
/// credit given back.
pub(super) async fn memory_per_key(server: &RedisServer, limiter: &RedisLimiter, sha: &str) {
    println!("\nmemory per key (used_memory growth / keys, beside MEMORY USAGE of one key)");
    let flush = || {
        let _: () = server.query(&mut redis::cmd("FLUSHALL")).unwrap();
        used_memory(server)
    };
    // `sample` is a pattern: a bucket under a quota named per call carries the quota in its name.
    let report = |name: &str, before: f64, sample: &str| {
        let keys = dbsize(server);
        let names: Vec<String> = server.query(redis::cmd("KEYS").arg(sample)).unwrap();
        let sample = names.first().expect("the sample key exists");
        let usage: u64 = server
            .query(redis::cmd("MEMORY").arg("USAGE").arg(sample))
            .unwrap();
        let value: String = server.query(redis::cmd("GET").arg(sample)).unwrap();
        let per_key = (used_memory(server) - before) / keys;
        println!(
            "{name:<34} {keys:>8.0} keys {per_key:>7.1} B/key  MEMORY USAGE {usage} B  value {} B",
            value.len()
        );
        Record::new("redis", "memory")
            .text("name", name)
            .num("keys", keys)
            .num("bytes_per_key", per_key)
            .num("memory_usage", usage as f64)
            .num("value_bytes", value.len() as f64)
            .write();
    };
    // The TAT alone: one hour ahead, so that nothing expires while the row runs.
    let before = flush();
    let tat = evalsha(
        sha,
        &["rl:bench:__rand_int__"],
        &["3600000000", "1000", "1", "-1", "0", "0", "0"],
    );
    redis_benchmark_n(server, &tat, KEYS, true, 1_000_000);
    report("TAT (decision script)", before, "rl:bench:000000000001");
    // TAT:G: a booking of 2 settled at 1 gives one token back.
    let before = flush();
    let names: Vec<String> = (0..20_000).map(|i| format!("g:{i:06}")).collect();
    for chunk in names.chunks(1000) {
        let mut tasks = Vec::new();
        for key in chunk {
            let (limiter, key) = (limiter.clone(), key.clone());
            tasks.push(tokio::spawn(async move {
                let booking = limiter
                    .try_reserve_key_n_with_quota(&key, 2, &Quota::per_hour(1).with_burst(1000))
                    .await
                    .unwrap()
                    .unwrap();
                booking.settle(1).await.unwrap();
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    }
    report("TAT:G (after a give-back)", before, "rl:g:000001*");
}
