//! A layer that writes no headers on admitted responses (and keeps no refunds) decides a
//! request without making a verdict for it unless it refuses it. Its answers must be those of
//! the same layer with headers on, which makes one for every request, and those of an exact
//! token bucket (`MutexBucket`), request by request. The schedules mix clients (each its own
//! loopback address), costs (peeks, costs above the burst), requests without a key and the
//! passing of time, over a real loopback server and client.
#![cfg(feature = "axum")]

use crate::http_support;

use crate::common::mutex_bucket::MutexBucket;
use axum::{routing::get, Router};
use cellrate::{Clock, KeyedLimiter, Limiter, ManualClock, Nanos, Quota};
use cellrate_http::{Backend, ClientIp, Global, HeaderKey, Keyed, MissingKey, RateLimitLayer};
use http::{HeaderName, HeaderValue, StatusCode};
use http_support::{serve, Answer, HttpClient};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

/// Clients, each on a loopback address of its own (127.0.0.2 on).
const CLIENTS: u8 = 3;

/// 10 per second, 4 at once: a token every 100 ms.
fn quota() -> Quota {
    Quota::per_second(10).with_burst(4)
}

/// One request of a schedule: after `advance`, from client `client`, costing `cost`, with or
/// without an API key.
#[derive(Clone, Copy, Debug)]
struct Step {
    advance: Duration,
    client: u8,
    cost: u32,
    api_key: bool,
}

/// `n` steps drawn from `seed`: most cost 1, some are peeks (0), some cost more, some cost
/// more than the burst and can never pass; a fifth carry no API key.
fn schedule(seed: u64, n: usize) -> Vec<Step> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|_| Step {
            advance: Duration::from_millis(rng.u64(0..=150)),
            client: rng.u8(0..CLIENTS),
            cost: [1, 1, 1, 1, 0, 2, 3, 5][rng.usize(0..8)],
            api_key: rng.u8(0..5) != 0,
        })
        .collect()
}

fn client_ip(client: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + client))
}

/// What a request costs: its `x-cost` header.
fn cost_header<B: Backend>(builder: cellrate_http::RateLimitBuilder<B>) -> RateLimitLayer<B> {
    builder
        .cost(|head| {
            head.headers
                .get("x-cost")
                .and_then(|v| v.to_str().ok()?.parse().ok())
                .expect("every request of these tests states its cost")
        })
        .build()
}

/// A layer served on loopback, and a client per client address.
struct Served<B> {
    layer: RateLimitLayer<B>,
    clients: Vec<HttpClient>,
}

impl<B: Backend> Served<B> {
    async fn new(layer: RateLimitLayer<B>) -> Served<B> {
        let app = Router::new()
            .route("/", get(|| async { "ok" }))
            .layer(layer.clone());
        let addr = serve(app, true).await;
        let clients = (0..CLIENTS)
            .map(|c| HttpClient::bound(addr, client_ip(c)))
            .collect();
        Served { layer, clients }
    }

    async fn send(&self, step: &Step) -> Answer {
        let cost = step.cost.to_string();
        let key = format!("key-{}", step.client);
        let mut headers = vec![("x-cost", cost.as_str())];
        if step.api_key {
            headers.push(("x-api-key", key.as_str()));
        }
        self.clients[usize::from(step.client)]
            .get("/", &headers)
            .await
    }
}

/// Runs `steps` against the same policies with headers on admissions (`on`) and without
/// (`off`), advancing `clock` before each; `expected` says whether the exact token bucket
/// admits a step (`None`: no oracle for this layer). Returns the statuses.
async fn compare<B: Backend>(
    on: RateLimitLayer<B>,
    off: RateLimitLayer<B>,
    clock: &ManualClock,
    steps: &[Step],
    mut expected: impl FnMut(&Step) -> Option<bool>,
) -> Vec<StatusCode> {
    let (on, off) = (Served::new(on).await, Served::new(off).await);
    let mut statuses = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        clock.advance(step.advance);
        let (a, b) = (on.send(step).await, off.send(step).await);
        assert_eq!(a.status, b.status, "step {i} {step:?}: {a:?} against {b:?}");
        if a.status == StatusCode::OK {
            assert!(a.header("ratelimit").is_some(), "step {i}: {a:?}");
            assert!(b.header("ratelimit").is_none(), "step {i}: {b:?}");
            assert!(b.header("ratelimit-policy").is_none(), "step {i}: {b:?}");
        } else {
            // A refusal is written the same way, figures and all.
            for name in [
                "retry-after",
                "ratelimit",
                "ratelimit-policy",
                "content-type",
            ] {
                assert_eq!(a.header(name), b.header(name), "step {i} {step:?}: {name}");
            }
            assert_eq!(a.body, b.body, "step {i}");
        }
        if let Some(admitted) = expected(step) {
            assert_eq!(
                a.status == StatusCode::OK,
                admitted,
                "step {i} {step:?}: {a:?}"
            );
        }
        statuses.push(a.status);
    }
    assert_eq!(on.layer.stats(), off.layer.stats());
    statuses
}

/// Whether an exact bucket admits `cost` at `now`, spending it if so.
fn admits(bucket: &MutexBucket<ManualClock>, cost: u32, now: Nanos) -> bool {
    bucket.check_n_at(cost, now).is_ok()
}

fn keyed<K: std::hash::Hash + Eq + Send + Sync + 'static>(
    clock: &ManualClock,
) -> Arc<KeyedLimiter<K, ManualClock>> {
    Arc::new(KeyedLimiter::builder(quota()).clock(clock.clone()).build())
}

fn oracles(clock: &ManualClock) -> Vec<MutexBucket<ManualClock>> {
    (0..CLIENTS)
        .map(|_| MutexBucket::with_clock(quota(), clock.clone()))
        .collect()
}

#[tokio::test]
async fn per_ip_admissions_without_headers_are_decided_as_with_them() {
    let clock = ManualClock::new();
    let layer = |headers: bool| {
        let policy = Keyed::new("per-ip", keyed::<IpAddr>(&clock), ClientIp::new());
        cost_header(RateLimitLayer::builder(policy).headers_on_allowed(headers))
    };
    let buckets = oracles(&clock);
    let steps = schedule(1, 200);
    let statuses = compare(layer(true), layer(false), &clock, &steps, |s| {
        Some(admits(&buckets[usize::from(s.client)], s.cost, clock.now()))
    })
    .await;
    // The schedule must exercise both answers.
    assert!(statuses.contains(&StatusCode::OK));
    assert!(statuses.contains(&StatusCode::TOO_MANY_REQUESTS));
}

#[tokio::test]
async fn a_global_limit_without_headers_is_decided_as_with_them() {
    let clock = ManualClock::new();
    let layer = |headers: bool| {
        let limiter = Arc::new(Limiter::with_clock(quota(), clock.clone()));
        cost_header(
            RateLimitLayer::builder(Global::new("global", limiter)).headers_on_allowed(headers),
        )
    };
    let bucket = MutexBucket::with_clock(quota(), clock.clone());
    let steps = schedule(2, 200);
    compare(layer(true), layer(false), &clock, &steps, |s| {
        Some(admits(&bucket, s.cost, clock.now()))
    })
    .await;
}

#[tokio::test]
async fn policies_decided_together_without_headers_are_decided_as_with_them() {
    // An optional API key (skipped when absent) and a global limit, all or nothing.
    let clock = ManualClock::new();
    let layer = |headers: bool| {
        let api_key = HeaderKey::new(HeaderName::from_static("x-api-key"));
        let keys = Keyed::new("api-key", keyed::<HeaderValue>(&clock), api_key)
            .missing_key(MissingKey::Skip);
        let global = Arc::new(Limiter::with_clock(quota(), clock.clone()));
        let policies = keys.and(Global::new("global", global));
        cost_header(RateLimitLayer::builder(policies).headers_on_allowed(headers))
    };
    let (keys, global) = (
        oracles(&clock),
        MutexBucket::with_clock(quota(), clock.clone()),
    );
    let steps = schedule(3, 200);
    compare(layer(true), layer(false), &clock, &steps, |s| {
        let key = s.api_key.then(|| &keys[usize::from(s.client)]);
        let room = |b: &MutexBucket<ManualClock>| b.available_at(clock.now()) >= s.cost;
        let admitted = room(&global) && key.is_none_or(room);
        if admitted {
            assert!(
                admits(&global, s.cost, clock.now())
                    && key.is_none_or(|k| admits(k, s.cost, clock.now()))
            );
        }
        Some(admitted)
    })
    .await;
}

#[tokio::test]
async fn tiers_without_headers_are_decided_as_with_them() {
    // Client 0 is on a tier of burst 2, the others on the limiter's quota.
    let clock = ManualClock::new();
    let small = Quota::per_second(10).with_burst(2);
    let tier = move |ip: &IpAddr| if *ip == client_ip(0) { small } else { quota() };
    let layer = |headers: bool| {
        let policy = Keyed::new("per-ip", keyed::<IpAddr>(&clock), ClientIp::new())
            .quota_per_request(move |_, ip: &IpAddr| tier(ip));
        cost_header(RateLimitLayer::builder(policy).headers_on_allowed(headers))
    };
    let buckets: HashMap<u8, MutexBucket<ManualClock>> = (0..CLIENTS)
        .map(|c| {
            (
                c,
                MutexBucket::with_clock(tier(&client_ip(c)), clock.clone()),
            )
        })
        .collect();
    let steps = schedule(4, 200);
    compare(layer(true), layer(false), &clock, &steps, |s| {
        Some(admits(&buckets[&s.client], s.cost, clock.now()))
    })
    .await;
}

#[tokio::test]
async fn shadow_mode_without_headers_counts_as_with_them() {
    let clock = ManualClock::new();
    let layer = |headers: bool| {
        let policy = Keyed::new("per-ip", keyed::<IpAddr>(&clock), ClientIp::new());
        cost_header(
            RateLimitLayer::builder(policy)
                .shadow(true)
                .headers_on_allowed(headers),
        )
    };
    let on = layer(true);
    let buckets = oracles(&clock);
    let mut refused = 0;
    let steps = schedule(5, 200);
    let statuses = compare(on.clone(), layer(false), &clock, &steps, |s| {
        refused += u64::from(!admits(
            &buckets[usize::from(s.client)],
            s.cost,
            clock.now(),
        ));
        None
    })
    .await;
    assert!(statuses.iter().all(|s| *s == StatusCode::OK));
    assert!(refused > 0);
    assert_eq!(on.stats().shadow_denied, refused);
}

#[tokio::test]
async fn a_request_without_a_key_is_answered_as_with_headers() {
    // The API key is required: a request without it is a 400 either way, and counted so.
    let clock = ManualClock::new();
    let layer = |headers: bool| {
        let api_key = HeaderKey::new(HeaderName::from_static("x-api-key"));
        let policy = Keyed::new("api-key", keyed::<HeaderValue>(&clock), api_key);
        cost_header(RateLimitLayer::builder(policy).headers_on_allowed(headers))
    };
    let keys = oracles(&clock);
    let steps = schedule(6, 100);
    let statuses = compare(layer(true), layer(false), &clock, &steps, |s| {
        Some(s.api_key && admits(&keys[usize::from(s.client)], s.cost, clock.now()))
    })
    .await;
    assert!(statuses.contains(&StatusCode::BAD_REQUEST));
}
