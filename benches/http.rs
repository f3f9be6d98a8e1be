//! The time the rate limit layer adds to a request, in process (`oneshot`, no network): one
//! axum app bare, behind cellrate's layer and behind tower_governor 0.8 (governor 0.10), each
//! limiting per client IP over 1,000 clients (a `ConnectInfo` per request, as axum sets it),
//! with a quota that admits every request. With and without rate limit headers.
//!
//! Paired, as `keyed_paired`: in each round every subject serves one chunk of requests, in an
//! order that rotates from round to round, so the subjects of one round run within
//! milliseconds of each other under the same load. A chunk is timed in the thread's CPU time
//! (on Unix), so that time the thread spends preempted by other processes does not count. A layer's added time in a round is its
//! chunk's time per request minus `bare`'s; the figures are the medians (p25-p75) of those
//! differences over the rounds, and the ratio of cellrate's median to tower_governor's. (A
//! median of per-round ratios would be unstable: on a loaded machine a round's difference can
//! be near zero or negative.)
//!
//! Run: `cargo bench -p cellrate-benches --features http -- http` (about 30 s).

use crate::keyed_paired::quantile;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::{routing::get, Router};
use cellrate::http::{ClientIp, Keyed, RateLimitLayer};
use cellrate::{KeyedLimiter, Quota};
use http::Request;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
#[cfg(not(unix))]
use std::time::Instant;
use tower::ServiceExt;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::GovernorLayer;

const CLIENTS: u32 = 1_000;
const CHUNK: u32 = 2_000;
const ROUNDS: usize = 201;

fn app() -> Router {
    Router::new().route("/", get(|| async { "ok" }))
}

/// The router as `axum::serve` runs it: `into_make_service` calls `with_state(())`, which
/// builds each route's layered service once instead of on every request.
fn served(router: Router) -> Router {
    router.with_state(())
}

/// A layer that does nothing: what axum charges any layer (`Router::layer` boxes the layered
/// service's future and maps its response), the floor under both rate limit layers.
fn noop_app() -> Router {
    app().layer(tower::layer::layer_fn(|service| service))
}

fn cellrate_app(headers: bool) -> Router {
    let quota = Quota::per_second(1_000_000).with_burst(1_000_000);
    let limiter = KeyedLimiter::<IpAddr>::builder(quota)
        .max_keys(10_000)
        .build();
    let layer = RateLimitLayer::builder(Keyed::new("per-ip", Arc::new(limiter), ClientIp::new()))
        .headers_on_allowed(headers)
        .build();
    app().layer(layer)
}

fn governor_app(headers: bool) -> Router {
    let mut builder = GovernorConfigBuilder::default();
    builder.per_nanosecond(1_000).burst_size(1_000_000);
    if headers {
        let config = builder.use_headers().finish().expect("a valid config");
        app().layer(GovernorLayer::new(config))
    } else {
        let config = builder.finish().expect("a valid config");
        app().layer(GovernorLayer::new(config))
    }
}

/// A request from client `i`, with its address as axum's `ConnectInfo` sets it.
fn request(i: u32) -> Request<Body> {
    let ip = Ipv4Addr::from(0x0a00_0000 + i % CLIENTS);
    Request::get("/")
        .extension(ConnectInfo(SocketAddr::from((ip, 40_000))))
        .body(Body::empty())
        .unwrap()
}

/// Nanoseconds per request over one chunk.
fn chunk(runtime: &tokio::runtime::Runtime, router: &Router, start: u32) -> f64 {
    let began = cpu_ns();
    runtime.block_on(async {
        for i in start..start + CHUNK {
            let response = router.clone().oneshot(request(i)).await.unwrap();
            assert!(response.status().is_success());
        }
    });
    (cpu_ns() - began) as f64 / f64::from(CHUNK)
}

/// This thread's CPU time in nanoseconds.
#[cfg(unix)]
fn cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY:
    // - `t` is a valid, writable timespec for the call's duration.
    // - CLOCK_THREAD_CPUTIME_ID is supported by every Unix this suite runs on; a failure is
    //   checked below rather than assumed away.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Wall time where there is no thread CPU clock.
#[cfg(not(unix))]
fn cpu_ns() -> u64 {
    use std::sync::OnceLock;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// The median, p25 and p75 of `v`.
fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| quantile(&v, q);
    (at(0.5), at(0.25), at(0.75))
}

pub fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let subjects = [
        ("bare", app()),
        ("cellrate", cellrate_app(false)),
        ("tower_governor", governor_app(false)),
        ("cellrate+headers", cellrate_app(true)),
        ("tower_governor+headers", governor_app(true)),
        ("noop_layer", noop_app()),
    ]
    .map(|(name, router)| (name, served(router)));
    // HTTP_BENCH_ONLY=cellrate runs one subject alone (for a profiler); no figures then.
    if let Ok(only) = std::env::var("HTTP_BENCH_ONLY") {
        let (_, router) = subjects
            .iter()
            .find(|(n, _)| *n == only)
            .expect("a subject");
        for round in 0..ROUNDS {
            chunk(&runtime, router, round as u32 * CHUNK);
        }
        return;
    }
    let mut times = vec![Vec::with_capacity(ROUNDS); subjects.len()];
    for round in 0..ROUNDS {
        for k in 0..subjects.len() {
            let s = (round + k) % subjects.len();
            let start = (round as u32) * CHUNK;
            times[s].push(chunk(&runtime, &subjects[s].1, start));
        }
    }
    let warm = ROUNDS / 10; // the first rounds fill the tables and warm the caches
    let rounds = |s: usize| times[s][warm..].to_vec();
    println!(
        "CPU ns per request (median, p25-p75 over {} rounds of {CHUNK})",
        ROUNDS - warm
    );
    for (s, (name, _)) in subjects.iter().enumerate() {
        let (m, lo, hi) = median(rounds(s));
        println!("{name:<24} {m:>7.0} ns  ({lo:.0}-{hi:.0})");
    }
    let added = |s: usize, base: usize| -> Vec<f64> {
        rounds(s)
            .iter()
            .zip(rounds(base))
            .map(|(t, b)| t - b)
            .collect()
    };
    // Over bare: what a user pays. Over the no-op layer: the layer's own work.
    for (base, what) in [(0, "bare"), (5, "the no-op layer")] {
        println!("added time over {what}: median (p25-p75) of per-round differences");
        for (c, g, label) in [(1, 2, "no headers"), (3, 4, "with headers")] {
            let (ac, clo, chi) = median(added(c, base));
            let (ag, glo, ghi) = median(added(g, base));
            println!(
                "{label:<13} cellrate {ac:>5.0} ns ({clo:.0}-{chi:.0}), \
                 tower_governor {ag:>5.0} ns ({glo:.0}-{ghi:.0}): {:.2}x",
                ac / ag
            );
        }
    }
}
