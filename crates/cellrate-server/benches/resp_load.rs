//! `CL.THROTTLE` over RESP on loopback, driven by `redis-benchmark` with one command line for
//! every subject: cellrate-server (its default settings, embedded storage) and its own `PING`;
//! throttlecrab-server's `THROTTLE` (when `THROTTLECRAB_SERVER` names its binary); redis-server
//! running a GCRA script (`gcra.lua`) by `EVALSHA`; and redis-server's `PING`, the floor. Run by
//! `benches/report.sh` (suite `resp`), or `cargo bench -p cellrate-server --bench resp_load`;
//! `BENCH_QUICK=1` for a smoke run.
//!
//! Every subject runs as users run it, with its defaults (cellrate-server's runtime has a
//! worker per core, Redis one thread); so does the generator (`redis-benchmark`, one thread).
//! On a 2-core machine they share the cores: each row gives the CPU each side used, and what
//! the rest of the machine used meanwhile (from `/proc/stat`), which says what bounded it. The
//! subjects of one configuration run one after the other, so that their ratios are taken
//! minutes apart at most. Each run is sized by a short pilot to last about three seconds.
//! redis-cell's parameters `15 30 60 1` (a bucket of 16, one token every 2 s) are throttlecrab's
//! `16 30 60 1` (its burst counts the whole bucket).

mod common;

use cellrate_server::{Config, Listeners, Server, Settings};
use std::net::TcpListener as StdListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SCRIPT: &str = include_str!("gcra.lua");

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("serve") => serve(&args[2]),
        _ => parent(),
    }
}

/// cellrate-server serving RESP on `port`, with its defaults, until SIGTERM.
fn serve(port: &str) {
    let dir = std::env::temp_dir().join(format!("cellrate-resp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config_dir = dir.clone();
    runtime.block_on(async move {
        let bind = |port: &str| tokio::net::TcpListener::bind(format!("127.0.0.1:{port}"));
        let listeners = Listeners::new(bind("0").await.unwrap(), bind("0").await.unwrap())
            .resp(bind(port).await.unwrap());
        let server = Server::new(Settings::for_dir(&config_dir), Config::default())
            .await
            .unwrap();
        server
            .serve_with(listeners, cellrate_server::termination())
            .await
            .unwrap();
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a run measured.
#[derive(Clone, Copy, Debug, Default)]
struct Run {
    rate: f64,
    p50_ms: f64,
    p99_ms: f64,
    /// Cores busy: the server, the generator, the rest of the machine.
    server: f64,
    generator: f64,
    other: f64,
    load: f64,
}

/// A server under test.
struct Subject {
    name: &'static str,
    port: u16,
    pid: u32,
    command: Vec<String>,
    /// Whether its command names a key (the rows of 1,000,000 keys are the keyed ones only).
    keyed: bool,
}

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for(port: u16, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{name} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

fn version(program: &str, arg: &str) -> String {
    Command::new(program)
        .arg(arg)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn parent() {
    let quick = std::env::var("BENCH_QUICK").as_deref() == Ok("1");
    let seconds = if quick { 0.4 } else { 3.0 };
    let mut children: Vec<Child> = Vec::new();
    let mut subjects = Vec::new();

    let port = free_port();
    let cellrate = Command::new(std::env::current_exe().unwrap())
        .args(["serve", &port.to_string()])
        .spawn()
        .unwrap();
    wait_for(port, "cellrate-server");
    let command = "CL.THROTTLE key:__rand_int__ 15 30 60 1";
    for (name, command, keyed) in [
        ("cellrate-server", command, true),
        ("cellrate-server PING", "PING", false),
    ] {
        subjects.push(Subject {
            name,
            port,
            pid: cellrate.id(),
            command: words(command),
            keyed,
        });
    }
    children.push(cellrate);

    if let Ok(path) = std::env::var("THROTTLECRAB_SERVER") {
        let port = free_port();
        let child = Command::new(&path)
            .args([
                "--redis",
                "--redis-host",
                "127.0.0.1",
                "--redis-port",
                &port.to_string(),
            ])
            .args(["--log-level", "warn"])
            .spawn()
            .unwrap();
        wait_for(port, "throttlecrab-server");
        subjects.push(Subject {
            name: "throttlecrab-server",
            port,
            pid: child.id(),
            command: words("THROTTLE key:__rand_int__ 16 30 60 1"),
            keyed: true,
        });
        children.push(child);
    } else {
        eprintln!("resp: THROTTLECRAB_SERVER not set: no throttlecrab-server rows");
    }

    let port = free_port();
    let redis = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server");
    wait_for(port, "redis-server");
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "SCRIPT", "LOAD", SCRIPT])
        .output()
        .expect("redis-cli");
    let sha = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert_eq!(sha.len(), 40, "SCRIPT LOAD: {out:?}");
    subjects.push(Subject {
        name: "Redis + Lua",
        port,
        pid: redis.id(),
        command: words(&format!("EVALSHA {sha} 1 key:__rand_int__ 15 30 60 1")),
        keyed: true,
    });
    subjects.push(Subject {
        name: "Redis PING",
        port,
        pid: redis.id(),
        command: words("PING"),
        keyed: false,
    });
    children.push(redis);

    let mut rows = Vec::new();
    for keys in [10_000u64, 1_000_000] {
        for clients in [32u32, 128] {
            for pipeline in [1u32, 16] {
                for subject in subjects.iter().filter(|s| s.keyed || keys == 10_000) {
                    let run = measure(subject, clients, pipeline, keys, seconds);
                    eprintln!(
                        "resp: {} c={clients} P={pipeline} r={keys}: {run:?}",
                        subject.name
                    );
                    rows.push((keys, clients, pipeline, subject.name, run));
                }
            }
        }
    }
    let memory = bytes_per_key(&subjects[0]);
    for mut child in children {
        let _ = Command::new("kill").arg(child.id().to_string()).status();
        let _ = child.wait();
    }
    let versions = [
        ("redis-benchmark", version("redis-benchmark", "--version")),
        ("redis-server", version("redis-server", "--version")),
        (
            "throttlecrab-server",
            std::env::var("THROTTLECRAB_SERVER")
                .map_or("not installed".to_owned(), |p| version(&p, "--version")),
        ),
    ];
    report(&rows, &versions, memory, quick);
}

/// `redis-benchmark` against `subject`: a pilot, then a run sized to last `seconds`.
fn measure(subject: &Subject, clients: u32, pipeline: u32, keys: u64, seconds: f64) -> Run {
    let pilot = benchmark(subject, clients, pipeline, keys, 20_000);
    let requests = (pilot.rate * seconds).clamp(20_000.0, 10_000_000.0) as u64;
    benchmark(subject, clients, pipeline, keys, requests)
}

fn benchmark(subject: &Subject, clients: u32, pipeline: u32, keys: u64, requests: u64) -> Run {
    let args = [
        "-h".to_owned(),
        "127.0.0.1".to_owned(),
        "-p".to_owned(),
        subject.port.to_string(),
        "-c".to_owned(),
        clients.to_string(),
        "-P".to_owned(),
        pipeline.to_string(),
        "-r".to_owned(),
        keys.to_string(),
        "-n".to_owned(),
        requests.to_string(),
        "--csv".to_owned(),
    ];
    let (server0, children0, machine0) = (cpu_of(subject.pid), own_children_cpu(), machine());
    let started = Instant::now();
    let out = Command::new("redis-benchmark")
        .args(&args)
        .args(&subject.command)
        .stderr(Stdio::null())
        .output()
        .expect("redis-benchmark");
    let took = started.elapsed().as_secs_f64();
    let (server1, children1, machine1) = (cpu_of(subject.pid), own_children_cpu(), machine());
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    let fields: Vec<f64> = line
        .split(',')
        .skip(1)
        .filter_map(|f| f.trim_matches('"').parse().ok())
        .collect();
    assert!(
        fields.len() >= 6,
        "redis-benchmark {args:?} {:?}: {text}",
        subject.command
    );
    let server = (server1 - server0) / took;
    let generator = (children1 - children0) / took;
    let busy = (machine1 - machine0) / took;
    Run {
        rate: fields[0],
        p50_ms: fields[3],
        p99_ms: fields[5],
        server,
        generator,
        other: (busy - server - generator).max(0.0),
        load: load_average(),
    }
}

/// The CPU seconds (user and system) process `pid` has used.
fn cpu_of(pid: u32) -> f64 {
    stat_seconds(&format!("/proc/{pid}/stat"), 11)
}

/// The CPU seconds this process's waited-for children have used (`redis-benchmark` runs).
fn own_children_cpu() -> f64 {
    stat_seconds("/proc/self/stat", 13)
}

/// Two clock-tick fields of a `/proc/.../stat` line summed, from field `first` (counted after
/// the command name), in seconds.
fn stat_seconds(path: &str, first: usize) -> f64 {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<f64> = after
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0.0))
        .collect();
    let tick = |i: usize| fields.get(i).copied().unwrap_or(0.0);
    (tick(first) + tick(first + 1)) / 100.0
}

/// The machine's busy CPU seconds, from `/proc/stat` (every state but idle and iowait).
fn machine() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let first = stat.lines().next().unwrap_or_default();
    let ticks: Vec<f64> = first
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0.0))
        .collect();
    let all: f64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3).copied().unwrap_or(0.0) + ticks.get(4).copied().unwrap_or(0.0);
    (all - idle) / 100.0
}

fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// The resident memory cellrate-server holds per key of its throttle table, after the runs of
/// 1,000,000 keys: its RSS over the keys `INFO` reports (all it holds beside them included).
fn bytes_per_key(cellrate: &Subject) -> Option<(u64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", cellrate.pid)).ok()?;
    let rss_kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let out = Command::new("redis-cli")
        .args(["-p", &cellrate.port.to_string(), "INFO"])
        .output()
        .ok()?;
    let info = String::from_utf8_lossy(&out.stdout);
    let keys: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("db0:keys="))?
        .split(',')
        .next()?
        .parse()
        .ok()?;
    Some((keys, rss_kb * 1024.0 / keys.max(1) as f64))
}

type Row<'a> = (u64, u32, u32, &'a str, Run);

/// The tables, to stderr and as records for report.py.
fn report(rows: &[Row<'_>], versions: &[(&str, String)], memory: Option<(u64, f64)>, quick: bool) {
    let mut lines = vec![
        format!(
            "Versions: {}.",
            versions
                .iter()
                .map(|(name, v)| format!("{name}: `{v}`"))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        String::new(),
        "| keys | clients | pipeline | subject | requests/s | p50 ms | p99 ms | server CPU | generator CPU | rest of the machine | load (1 min) |".to_owned(),
        "|---|---|---|---|---|---|---|---|---|---|---|".to_owned(),
    ];
    for (keys, clients, pipeline, name, run) in rows {
        lines.push(format!(
            "| {keys} | {clients} | {pipeline} | {name} | {:.0} | {:.3} | {:.3} | {:.0}% | {:.0}% | {:.0}% | {:.2} |",
            run.rate,
            run.p50_ms,
            run.p99_ms,
            100.0 * run.server,
            100.0 * run.generator,
            100.0 * run.other,
            run.load
        ));
    }
    lines.push(String::new());
    lines.push("cellrate-server's rate as a multiple of each peer's in the same configuration, and the targets (pipeline 1: at least throttlecrab's rate, 1.2x Redis + Lua, 0.85x its own PING, p99 under 1 ms; pipeline 16: at least 3x Redis + Lua and 10x throttlecrab):".to_owned());
    lines.push(String::new());
    lines.push("| keys | clients | pipeline | x throttlecrab | x Redis + Lua | x own PING | x Redis PING | p99 ms | targets |".to_owned());
    lines.push("|---|---|---|---|---|---|---|---|---|".to_owned());
    let find = |keys: u64, clients: u32, pipeline: u32, name: &str| {
        rows.iter()
            .find(|r| r.0 == keys && r.1 == clients && r.2 == pipeline && r.3 == name)
            .map(|r| r.4)
    };
    let verdict = |met: bool| if met { "met" } else { "**missed**" };
    for keys in [10_000, 1_000_000] {
        for clients in [32, 128] {
            for pipeline in [1, 16] {
                let Some(us) = find(keys, clients, pipeline, "cellrate-server") else {
                    continue;
                };
                // The PING rows, keyless, are run at 10,000 keys only.
                let ratio = |name: &str| {
                    let at = if name.contains("PING") { 10_000 } else { keys };
                    find(at, clients, pipeline, name).map(|r| us.rate / r.rate)
                };
                let shown = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{r:.2}"));
                let (tc, lua, own, redis) = (
                    ratio("throttlecrab-server"),
                    ratio("Redis + Lua"),
                    ratio("cellrate-server PING"),
                    ratio("Redis PING"),
                );
                let targets = if pipeline == 1 {
                    format!(
                        "throttlecrab {}, Lua {}, own PING {}, p99 {}",
                        tc.map_or("-", |r| verdict(r >= 1.0)),
                        lua.map_or("-", |r| verdict(r >= 1.2)),
                        own.map_or("-", |r| verdict(r >= 0.85)),
                        verdict(us.p99_ms < 1.0)
                    )
                } else {
                    format!(
                        "Lua {}, throttlecrab {}",
                        lua.map_or("-", |r| verdict(r >= 3.0)),
                        tc.map_or("-", |r| verdict(r >= 10.0))
                    )
                };
                lines.push(format!(
                    "| {keys} | {clients} | {pipeline} | {} | {} | {} | {} | {:.3} | {targets} |",
                    shown(tc),
                    shown(lua),
                    shown(own),
                    shown(redis),
                    us.p99_ms
                ));
            }
        }
    }
    if let Some((keys, bytes)) = memory {
        lines.push(String::new());
        lines.push(format!(
            "cellrate-server held {keys} keys after the runs of 1,000,000 keys, in {bytes:.0} bytes of resident memory per key (the process's whole RSS over its keys)."
        ));
    }
    if quick {
        lines.push(String::new());
        lines.push("BENCH_QUICK=1: a smoke run, not a measurement.".to_owned());
    }
    common::report_markdown(&lines);
}
