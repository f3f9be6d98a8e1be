//! `ShouldRateLimit` over gRPC on loopback: decisions per second and latency of cellrate-server
//! (default settings and storage), beside a floor: the same tonic server answering OK without
//! deciding. Run by `benches/report.sh` (suite `rls`), or `cargo bench -p cellrate-server
//! --bench rls_load`; `BENCH_QUICK=1` for a smoke run.
//!
//! The core split: the server under test runs in a child process with one tokio worker
//! (`TOKIO_WORKER_THREADS=1`), the load generator in this process on one thread (a
//! current-thread runtime), so on a 2-core machine each has a core. Each round starts a fresh
//! child, measures the saturating rate (a closed loop of 64 calls in flight over 4 connections),
//! then the latency at half that rate (an open loop: calls sent on a fixed schedule, never held
//! back by a reply; the generator spins to each call's time, since tokio's timer wakes on whole
//! milliseconds and would send each millisecond's calls in one burst). Each call is timed twice:
//! from its scheduled start, so that a stall is counted in full, and from the moment the
//! generator sent it; the generator's lateness, between the two, is a column of its own. The
//! target is judged on the time from the send, which the generator's own stalls do not change (a
//! call waiting for an HTTP/2 stream is still being timed). The subjects alternate rounds; each
//! row gives the median over its rounds and both processes' CPU use, which says which side was
//! the bottleneck. Every call names one of 1,000 client addresses under a rule that admits
//! them all, so each is a keyed lookup and a compare-and-swap.

mod common;

use cellrate_server::{Config, Server, Settings};
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::rate_limit_descriptor::Entry;
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::{Code, DescriptorStatus};
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_client::RateLimitServiceClient;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::{
    RateLimitService, RateLimitServiceServer,
};
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use std::net::TcpListener as StdListener;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::transport::Channel;

const CONFIG: &str = "domain: bench\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: second, requests_per_unit: 4000000000, name: per-ip}\n";
const KEYS: usize = 1_000;
const IN_FLIGHT: usize = 64;
const CONNECTIONS: usize = 4;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("serve") => child(&args[2], &args[3], false),
        Some("floor") => child(&args[2], &args[3], true),
        _ => parent(),
    }
}

/// The server under test (or the floor) on `port`, until SIGTERM.
fn child(port: &str, dir: &str, floor: bool) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let grpc = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}"))
            .await
            .unwrap();
        if floor {
            let settings = Settings::for_dir(dir);
            let (_, health) = tonic_health::server::health_reporter();
            tonic::transport::Server::builder()
                .max_concurrent_streams(settings.max_concurrent_streams)
                .http2_keepalive_interval(Some(Duration::from_secs(30)))
                .tcp_nodelay(true)
                .add_service(health)
                .add_service(
                    RateLimitServiceServer::new(Floor)
                        .max_decoding_message_size(settings.max_message_bytes)
                        .max_encoding_message_size(settings.max_message_bytes),
                )
                .serve_with_incoming_shutdown(tokio_stream_of(grpc), cellrate_server::termination())
                .await
                .unwrap();
        } else {
            let settings = Settings::for_dir(dir);
            let config = Config::load_dir(&settings.config_dir()).unwrap();
            let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let server = Server::new(settings, config).await.unwrap();
            server
                .serve_on(grpc, http, cellrate_server::termination())
                .await
                .unwrap();
        }
    });
}

fn tokio_stream_of(
    listener: tokio::net::TcpListener,
) -> impl futures_util::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    futures_util::stream::unfold(listener, |listener| async move {
        let accepted = listener.accept().await.map(|(s, _)| {
            let _ = s.set_nodelay(true);
            s
        });
        Some((accepted, listener))
    })
}

/// The floor: OK for every descriptor, nothing decided.
struct Floor;

#[tonic::async_trait]
impl RateLimitService for Floor {
    async fn should_rate_limit(
        &self,
        request: tonic::Request<RateLimitRequest>,
    ) -> Result<tonic::Response<RateLimitResponse>, tonic::Status> {
        let n = request.get_ref().descriptors.len();
        Ok(tonic::Response::new(RateLimitResponse {
            overall_code: Code::Ok as i32,
            statuses: vec![
                DescriptorStatus {
                    code: Code::Ok as i32,
                    ..Default::default()
                };
                n
            ],
            ..Default::default()
        }))
    }
}

/// One round's figures.
#[derive(Clone, Copy, Debug)]
struct Round {
    rate: f64,
    p50_us: f64,
    p99_us: f64,
    /// The same, timed from the send instead of the schedule.
    sent_p50_us: f64,
    sent_p99_us: f64,
    /// How late the generator sent its calls, p99.
    lag_p99_us: f64,
    server_cpu: f64,
    load_cpu: f64,
    /// The server's CPU time per call, in µs: what a busy machine changes least.
    server_us_per_call: f64,
}

fn parent() {
    let quick = std::env::var("BENCH_QUICK").as_deref() == Ok("1");
    let (seconds, rounds) = if quick { (0.5, 1) } else { (3.0, 5) };
    let dir = std::env::temp_dir().join(format!("cellrate-rls-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bench.yaml"), CONFIG).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut results: Vec<(&str, Vec<Round>)> =
        vec![("floor", Vec::new()), ("cellrate-server", Vec::new())];
    for _ in 0..rounds {
        for (subject, rows) in results.iter_mut() {
            let role = if *subject == "floor" {
                "floor"
            } else {
                "serve"
            };
            let round = runtime.block_on(round(role, &dir, Duration::from_secs_f64(seconds)));
            eprintln!("rls: {subject}: {round:?}");
            rows.push(round);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    report(&results, quick);
}

async fn round(role: &str, dir: &std::path::Path, length: Duration) -> Round {
    let port = StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([role, &port.to_string(), dir.to_str().unwrap()])
        .env("TOKIO_WORKER_THREADS", "1")
        .spawn()
        .unwrap();
    let mut clients = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    for _ in 0..CONNECTIONS {
        loop {
            match Channel::from_shared(format!("http://127.0.0.1:{port}"))
                .unwrap()
                .connect()
                .await
            {
                Ok(channel) => {
                    clients.push(RateLimitServiceClient::new(channel));
                    break;
                }
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await
                }
                Err(e) => panic!("the {role} server did not start: {e}"),
            }
        }
    }
    let requests: Arc<Vec<RateLimitRequest>> = Arc::new((0..KEYS).map(request).collect());
    // Warm up, then the saturating rate.
    closed_loop(&clients, &requests, Duration::from_millis(200)).await;
    let (server_before, load_before) = (cpu_seconds(child.id()), cpu_seconds(std::process::id()));
    let started = Instant::now();
    let calls = closed_loop(&clients, &requests, length).await;
    let took = started.elapsed().as_secs_f64();
    let server_seconds = cpu_seconds(child.id()) - server_before;
    let server_cpu = server_seconds / took;
    let load_cpu = (cpu_seconds(std::process::id()) - load_before) / took;
    let rate = calls as f64 / took;
    let open = open_loop(&clients, &requests, rate / 2.0, length).await;
    stop(&mut child);
    Round {
        rate,
        p50_us: open.scheduled.0,
        p99_us: open.scheduled.1,
        sent_p50_us: open.sent.0,
        sent_p99_us: open.sent.1,
        lag_p99_us: open.lag_p99,
        server_cpu,
        load_cpu,
        server_us_per_call: server_seconds * 1e6 / calls.max(1) as f64,
    }
}

fn request(i: usize) -> RateLimitRequest {
    RateLimitRequest {
        domain: "bench".to_owned(),
        descriptors: vec![RateLimitDescriptor {
            entries: vec![Entry {
                key: "remote_address".to_owned(),
                value: format!("10.0.{}.{}", i / 256, i % 256),
            }],
            ..Default::default()
        }],
        hits_addend: 0,
    }
}

/// Calls kept `IN_FLIGHT` at once for `length`: how many completed.
async fn closed_loop(
    clients: &[RateLimitServiceClient<Channel>],
    requests: &Arc<Vec<RateLimitRequest>>,
    length: Duration,
) -> u64 {
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for t in 0..IN_FLIGHT {
        let mut client = clients[t % clients.len()].clone();
        let (done, stop, requests) = (done.clone(), stop.clone(), requests.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = t;
            while !stop.load(Ordering::Relaxed) {
                let answer = client
                    .should_rate_limit(requests[i % KEYS].clone())
                    .await
                    .unwrap();
                assert_eq!(answer.get_ref().overall_code, Code::Ok as i32);
                done.fetch_add(1, Ordering::Relaxed);
                i += IN_FLIGHT;
            }
        }));
    }
    tokio::time::sleep(length).await;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.unwrap();
    }
    done.load(Ordering::Relaxed)
}

/// Latencies of the open loop, in µs: (p50, p99) from the schedule and from the send, and the
/// generator's lateness at p99.
struct OpenLoop {
    scheduled: (f64, f64),
    sent: (f64, f64),
    lag_p99: f64,
}

/// Calls sent at `rate` for `length`, each timed from its scheduled start and from its send.
async fn open_loop(
    clients: &[RateLimitServiceClient<Channel>],
    requests: &Arc<Vec<RateLimitRequest>>,
    rate: f64,
    length: Duration,
) -> OpenLoop {
    let total = (rate * length.as_secs_f64()) as usize;
    let interval = Duration::from_secs_f64(1.0 / rate);
    let start = tokio::time::Instant::now();
    let mut tasks = Vec::with_capacity(total);
    for i in 0..total {
        let at = start + interval * i as u32;
        // Spin to the call's time, yielding so that replies are read meanwhile: tokio's timer
        // wakes on whole milliseconds and would send each millisecond's calls in one burst.
        while tokio::time::Instant::now() < at {
            tokio::task::yield_now().await;
        }
        let mut client = clients[i % clients.len()].clone();
        let req = requests[i % KEYS].clone();
        tasks.push(tokio::spawn(async move {
            let sent = tokio::time::Instant::now();
            client.should_rate_limit(req).await.unwrap();
            (at.elapsed(), sent.elapsed(), sent - at)
        }));
    }
    let (mut scheduled, mut sent, mut lag) = (Vec::new(), Vec::new(), Vec::new());
    for task in tasks {
        let (from_schedule, from_send, late) = task.await.unwrap();
        scheduled.push(from_schedule.as_secs_f64() * 1e6);
        sent.push(from_send.as_secs_f64() * 1e6);
        lag.push(late.as_secs_f64() * 1e6);
    }
    let quantiles = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q) as usize];
        (at(0.5), at(0.99))
    };
    OpenLoop {
        scheduled: quantiles(scheduled),
        sent: quantiles(sent),
        lag_p99: quantiles(lag).1,
    }
}

/// The CPU time (user + system) of process `pid`, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

fn stop(child: &mut Child) {
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let _ = child.wait();
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The table, to stderr and as records for report.py.
fn report(results: &[(&str, Vec<Round>)], quick: bool) {
    let figure = |rows: &Vec<Round>, f: fn(&Round) -> f64| median(rows.iter().map(f).collect());
    let mut lines = vec![
        "| subject | decisions/s (saturating) | p50 / p99 at half rate, from the send | p50 / p99 from the schedule | generator late, p99 | server CPU | load generator CPU | server CPU µs per call |".to_owned(),
        "|---|---|---|---|---|---|---|---|".to_owned(),
    ];
    for (subject, rows) in results {
        lines.push(format!(
            "| {subject} | {:.0} | {:.0} / {:.0} µs | {:.0} / {:.0} µs | {:.0} µs | {:.0}% | {:.0}% | {:.1} |",
            figure(rows, |r| r.rate),
            figure(rows, |r| r.sent_p50_us),
            figure(rows, |r| r.sent_p99_us),
            figure(rows, |r| r.p50_us),
            figure(rows, |r| r.p99_us),
            figure(rows, |r| r.lag_p99_us),
            100.0 * figure(rows, |r| r.server_cpu),
            100.0 * figure(rows, |r| r.load_cpu),
            figure(rows, |r| r.server_us_per_call),
        ));
    }
    let ratio = figure(&results[1].1, |r| r.rate) / figure(&results[0].1, |r| r.rate);
    let p99 = figure(&results[1].1, |r| r.sent_p99_us);
    let scheduled_p99 = figure(&results[1].1, |r| r.p99_us);
    let floor_p99 = figure(&results[0].1, |r| r.sent_p99_us);
    let cost = figure(&results[1].1, |r| r.server_us_per_call)
        / figure(&results[0].1, |r| r.server_us_per_call);
    let verdict = |met: bool| if met { "met" } else { "**missed**" };
    lines.push(String::new());
    lines.push(format!(
        "cellrate-server's rate is {ratio:.2}x the floor's (target >= 0.85: {}), at {cost:.2}x its CPU time per call; its p99 at half its saturating rate is {:.2} ms from the send (target < 1 ms: {}; the floor's, answering without deciding, {:.2} ms) and {:.2} ms from the schedule, which adds the generator's lateness. Medians of {} rounds{}.",
        verdict(ratio >= 0.85),
        p99 / 1000.0,
        verdict(p99 < 1000.0),
        floor_p99 / 1000.0,
        scheduled_p99 / 1000.0,
        results[0].1.len(),
        if quick { " (BENCH_QUICK=1: a smoke run, not a measurement)" } else { "" }
    ));
    common::report_markdown(&lines);
}
