//! The time the rate limit layer adds to a request, in process (`oneshot`, no network): one
//! axum app bare, behind cellrate's layer and behind tower_governor 0.8 (governor 0.10), each
//! limiting per client IP over 1,000 clients (a `ConnectInfo` per request, as axum sets it),
//! with a quota that admits every request.
//!
//! Two placements: `Router::layer` (what most axum apps write; axum then boxes each layered
//! route's service and future, which a layer that does nothing pays too: `noop_layer`), and
//! around the whole router (`Layer::layer(router)`, as a tower service), where a layer pays
//! only for its own work. In each, the layers as they come (cellrate writes the `RateLimit`
//! headers on every response, tower_governor writes none) and doing the same work (both with
//! headers, both without).
//!
//! Paired, as `keyed_paired`: in each round every subject serves one chunk of requests, in an
//! order that rotates from round to round, so the subjects of one round run within
//! milliseconds of each other under the same load. A chunk is timed in the thread's CPU time
//! (on Unix), so that time the thread spends preempted by other processes does not count. A
//! layer's added time in a round is its chunk's time per request minus its baseline's; the
//! figures are the medians (p25-p75) of those differences over the rounds, and the ratio of
//! cellrate's median to tower_governor's. (A median of per-round ratios would be unstable: on
//! a loaded machine a round's difference can be near zero or negative.)
//!
//! Run: `cargo bench -p cellrate-benches --features http -- http` (about 40 s).
//! `HTTP_BENCH_ONLY=<subject>` serves one subject alone, for a profiler.

use crate::keyed_paired::quantile;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::response::Response;
use axum::{routing::get, Router};
use cellrate::http::{ClientIp, Keyed, RateLimitLayer};
use cellrate::{KeyedLimiter, Quota};
use http::Request;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
#[cfg(not(unix))]
use std::time::Instant;
use tower::{Layer, Service, ServiceExt};
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

fn cellrate_layer(headers: bool) -> RateLimitLayer<Keyed<ClientIp, cellrate::TickClock>> {
    let quota = Quota::per_second(1_000_000).with_burst(1_000_000);
    let limiter = KeyedLimiter::<IpAddr>::builder(quota)
        .max_keys(10_000)
        .build();
    RateLimitLayer::builder(Keyed::new("per-ip", Arc::new(limiter), ClientIp::new()))
        .headers_on_allowed(headers)
        .build()
}

/// tower_governor as it comes: no headers on admitted responses.
fn governor_layer() -> GovernorLayer<
    tower_governor::key_extractor::PeerIpKeyExtractor,
    governor::middleware::NoOpMiddleware<governor::clock::QuantaInstant>,
    Body,
> {
    let mut builder = GovernorConfigBuilder::default();
    builder.per_nanosecond(1_000).burst_size(1_000_000);
    GovernorLayer::new(builder.finish().expect("a valid config"))
}

/// tower_governor with its `x-ratelimit-*` headers on every response (`use_headers` changes
/// the layer's type).
fn governor_headers_router() -> Router {
    let mut builder = GovernorConfigBuilder::default();
    builder.per_nanosecond(1_000).burst_size(1_000_000);
    let config = builder.use_headers().finish().expect("a valid config");
    app().layer(GovernorLayer::new(config))
}

/// A request from client `i`, with its address as axum's `ConnectInfo` sets it.
fn request(i: u32) -> Request<Body> {
    let ip = Ipv4Addr::from(0x0a00_0000 + i % CLIENTS);
    Request::get("/")
        .extension(ConnectInfo(SocketAddr::from((ip, 40_000))))
        .body(Body::empty())
        .unwrap()
}

/// Nanoseconds per request over one chunk of requests to `service`.
fn chunk<S>(runtime: &tokio::runtime::Runtime, service: &S, start: u32) -> f64
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone,
{
    let began = cpu_ns();
    runtime.block_on(async {
        for i in start..start + CHUNK {
            let response = service.clone().oneshot(request(i)).await.unwrap();
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

/// A subject: its name and a chunk of requests to it, from a start index.
type Subject<'a> = (&'static str, Box<dyn Fn(u32) -> f64 + 'a>);

fn subject<'a, S>(name: &'static str, rt: &'a tokio::runtime::Runtime, service: S) -> Subject<'a>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + 'a,
{
    (name, Box::new(move |start| chunk(rt, &service, start)))
}

pub fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let rt = &rt;
    let noop = tower::layer::layer_fn(|service| service);
    let subjects: Vec<Subject> = vec![
        subject("bare", rt, served(app())),
        subject("noop_layer", rt, served(app().layer(noop))),
        subject("cellrate", rt, served(app().layer(cellrate_layer(true)))),
        subject(
            "cellrate_no_headers",
            rt,
            served(app().layer(cellrate_layer(false))),
        ),
        subject("tower_governor", rt, served(app().layer(governor_layer()))),
        subject(
            "tower_governor_headers",
            rt,
            served(governor_headers_router()),
        ),
        subject(
            "around_cellrate",
            rt,
            cellrate_layer(true).layer(served(app())),
        ),
        subject(
            "around_cellrate_no_headers",
            rt,
            cellrate_layer(false).layer(served(app())),
        ),
        subject(
            "around_tower_governor",
            rt,
            governor_layer().layer(served(app())),
        ),
    ];
    let index = |name: &str| subjects.iter().position(|(n, _)| *n == name).expect(name);
    if let Ok(only) = std::env::var("HTTP_BENCH_ONLY") {
        let chunk = &subjects[index(&only)].1;
        for round in 0..ROUNDS {
            chunk(round as u32 * CHUNK);
        }
        return;
    }
    let mut times = vec![Vec::with_capacity(ROUNDS); subjects.len()];
    for round in 0..ROUNDS {
        for k in 0..subjects.len() {
            let s = (round + k) % subjects.len();
            times[s].push((subjects[s].1)(round as u32 * CHUNK));
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
        println!("{name:<28} {m:>7.0} ns  ({lo:.0}-{hi:.0})");
    }
    let added = |s: usize, base: usize| -> Vec<f64> {
        rounds(s)
            .iter()
            .zip(rounds(base))
            .map(|(t, b)| t - b)
            .collect()
    };
    let row = |label: &str, ours: &str, theirs: &str, base: &str| {
        let (ac, clo, chi) = median(added(index(ours), index(base)));
        let (ag, glo, ghi) = median(added(index(theirs), index(base)));
        println!(
            "{label:<40} cellrate {ac:>5.0} ns ({clo:.0}-{chi:.0}), \
             tower_governor {ag:>5.0} ns ({glo:.0}-{ghi:.0}): {:.2}x",
            ac / ag
        );
    };
    println!("added time: median (p25-p75) of per-round differences");
    row(
        "Router::layer, as they come, over bare",
        "cellrate",
        "tower_governor",
        "bare",
    );
    row(
        "Router::layer, no headers, over bare",
        "cellrate_no_headers",
        "tower_governor",
        "bare",
    );
    row(
        "Router::layer, headers, over bare",
        "cellrate",
        "tower_governor_headers",
        "bare",
    );
    row(
        "Router::layer, no headers, over no-op",
        "cellrate_no_headers",
        "tower_governor",
        "noop_layer",
    );
    row(
        "around the router, as they come",
        "around_cellrate",
        "around_tower_governor",
        "bare",
    );
    row(
        "around the router, no headers",
        "around_cellrate_no_headers",
        "around_tower_governor",
        "bare",
    );
}
