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
//! Then the same apps on two threads at once (`http_threads.rs`): each thread serves requests
//! through one shared app (one limiter), chunks kept only where the threads overlapped, as
//! the other multi-thread rows (`overlap.rs`); and real servers on loopback under `wrk`
//! (`http_load.rs`).
//!
//! Run: `cargo bench -p cellrate-benches --features http -- http` (about a minute).
//! `HTTP_BENCH_ONLY=<subject>` serves one subject alone, for a profiler: one chunk to warm up,
//! then `HTTP_BENCH_REQUESTS` requests (default 400,000) in `profiled_requests`.

use crate::overlap::thread_cpu;
use crate::paired::row::quantile;
use crate::record::{sized, Record};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::response::Response;
use axum::{routing::get, Router};
use cellrate::{KeyedLimiter, Quota};
use cellrate_http::{ClientIp, Keyed, RateLimitLayer};
use http::Request;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use tower::{Layer, Service, ServiceExt};
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::GovernorLayer;

const CLIENTS: u32 = 1_000;
const CHUNK: u32 = 2_000;

/// Rounds of the single-thread part.
fn rounds() -> usize {
    sized(201, 21)
}

pub(crate) fn app() -> Router {
    Router::new().route("/", get(|| async { "ok" }))
}

/// The router as `axum::serve` runs it: `into_make_service` calls `with_state(())`, which
/// builds each route's layered service once instead of on every request.
pub(crate) fn served(router: Router) -> Router {
    router.with_state(())
}

pub(crate) fn cellrate_layer(
    headers: bool,
) -> RateLimitLayer<Keyed<ClientIp, cellrate::TickClock>> {
    let quota = Quota::per_second(1_000_000).with_burst(1_000_000);
    let limiter = KeyedLimiter::<IpAddr>::builder(quota)
        .max_keys(10_000)
        .build();
    RateLimitLayer::builder(Keyed::new("per-ip", Arc::new(limiter), ClientIp::new()))
        .headers_on_allowed(headers)
        .build()
}

/// tower_governor as it comes: no headers on admitted responses.
pub(crate) fn governor_layer() -> GovernorLayer<
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
pub(crate) fn governor_headers_router() -> Router {
    let mut builder = GovernorConfigBuilder::default();
    builder.per_nanosecond(1_000).burst_size(1_000_000);
    let config = builder.use_headers().finish().expect("a valid config");
    app().layer(GovernorLayer::new(config))
}

/// A request from client `i`, with its address as axum's `ConnectInfo` sets it.
pub(crate) fn request(i: u32) -> Request<Body> {
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
    let began = thread_cpu();
    serve(runtime, service, start, CHUNK);
    (thread_cpu() - began).as_nanos() as f64 / f64::from(CHUNK)
}

/// Serves `count` requests to `service`, from clients `start..`, each asserted a success.
pub(crate) fn serve<S>(runtime: &tokio::runtime::Runtime, service: &S, start: u32, count: u32)
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone,
{
    runtime.block_on(async {
        for i in start..start + count {
            let response = service.clone().oneshot(request(i)).await.unwrap();
            assert!(response.status().is_success());
        }
    });
}

/// [`serve`] kept out of line, so that callgrind can count it alone
/// (`--toggle-collect='*profiled_requests*'`).
#[inline(never)]
fn profiled_requests<S>(runtime: &tokio::runtime::Runtime, service: &S, count: u32)
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone,
{
    serve(runtime, service, CHUNK, count);
}

/// The median, p25 and p75 of `v`.
fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| quantile(&v, q);
    (at(0.5), at(0.25), at(0.75))
}

/// A subject: its name, a chunk of requests to it from a start index, and its profiled loop.
struct Subject<'a> {
    name: &'static str,
    chunk: Box<dyn Fn(u32) -> f64 + 'a>,
    profiled: Box<dyn Fn(u32) + 'a>,
}

fn subject<'a, S>(name: &'static str, rt: &'a tokio::runtime::Runtime, service: S) -> Subject<'a>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + 'a,
{
    let service = std::rc::Rc::new(service);
    let other = service.clone();
    Subject {
        name,
        chunk: Box::new(move |start| chunk(rt, &*service, start)),
        profiled: Box::new(move |count| profiled_requests(rt, &*other, count)),
    }
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
    let index = |name: &str| subjects.iter().position(|s| s.name == name).expect(name);
    if let Ok(only) = std::env::var("HTTP_BENCH_ONLY") {
        let subject = &subjects[index(&only)];
        let requests = std::env::var("HTTP_BENCH_REQUESTS").map_or(400_000, |n| {
            n.parse().expect("HTTP_BENCH_REQUESTS: a count")
        });
        (subject.chunk)(0); // every client seen, the caches warm
        (subject.profiled)(requests);
        return;
    }
    let rounds = rounds();
    let mut times = vec![Vec::with_capacity(rounds); subjects.len()];
    for round in 0..rounds {
        for k in 0..subjects.len() {
            let s = (round + k) % subjects.len();
            times[s].push((subjects[s].chunk)(round as u32 * CHUNK));
        }
    }
    let warm = rounds / 10; // the first rounds fill the tables and warm the caches
    let kept = |s: usize| times[s][warm..].to_vec();
    println!(
        "CPU ns per request (median, p25-p75 over {} rounds of {CHUNK})",
        rounds - warm
    );
    for (s, subject) in subjects.iter().enumerate() {
        let (m, lo, hi) = median(kept(s));
        println!("{:<28} {m:>7.0} ns  ({lo:.0}-{hi:.0})", subject.name);
        Record::new("http", "cpu")
            .text("name", subject.name)
            .nums("ns", &[lo, m, hi])
            .num("rounds", (rounds - warm) as f64)
            .num("chunk", f64::from(CHUNK))
            .write();
    }
    let added = |s: usize, base: usize| -> Vec<f64> {
        kept(s).iter().zip(kept(base)).map(|(t, b)| t - b).collect()
    };
    println!("added time: median (p25-p75) of per-round differences");
    for (label, ours, theirs, base) in ADDED {
        let (ac, clo, chi) = median(added(index(ours), index(base)));
        let (ag, glo, ghi) = median(added(index(theirs), index(base)));
        println!(
            "{label:<40} cellrate {ac:>5.0} ns ({clo:.0}-{chi:.0}), \
             tower_governor {ag:>5.0} ns ({glo:.0}-{ghi:.0}): {:.2}x",
            ac / ag
        );
        Record::new("http", "added")
            .text("name", label)
            .texts("subjects", &[ours, theirs, base])
            .nums("cellrate", &[clo, ac, chi])
            .nums("governor", &[glo, ag, ghi])
            .num("ratio", ac / ag)
            .write();
    }
    crate::http_threads::main();
    crate::http_load::main();
}

/// The added-time rows: label, cellrate's subject, tower_governor's, and the baseline.
const ADDED: [(&str, &str, &str, &str); 6] = [
    (
        "Router::layer, as they come, over bare",
        "cellrate",
        "tower_governor",
        "bare",
    ),
    (
        "Router::layer, no headers, over bare",
        "cellrate_no_headers",
        "tower_governor",
        "bare",
    ),
    (
        "Router::layer, headers, over bare",
        "cellrate",
        "tower_governor_headers",
        "bare",
    ),
    (
        "Router::layer, no headers, over no-op",
        "cellrate_no_headers",
        "tower_governor",
        "noop_layer",
    ),
    (
        "around the router, as they come",
        "around_cellrate",
        "around_tower_governor",
        "bare",
    ),
    (
        "around the router, no headers",
        "around_cellrate_no_headers",
        "around_tower_governor",
        "bare",
    ),
];
