//! The layer's options, over a real loopback server and client: shadow mode, refunds after the
//! response, costs, problem+json, tiers, keys from a header.
#![cfg(feature = "axum")]

use crate::http_support;

use axum::{http::StatusCode as AxumStatus, routing::get, Router};
use cellrate::{KeyedLimiter, Limiter, ManualClock, Quota};
use cellrate_http::{
    ClientIp, Global, HeaderKey, Keyed, MissingKey, RateLimitLayer, QUOTA_EXCEEDED,
};
use http::{HeaderName, HeaderValue, StatusCode};
use http_support::{ratelimit, serve, HttpClient};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

fn limiter(quota: Quota) -> Arc<Limiter<ManualClock>> {
    Arc::new(Limiter::with_clock(quota, ManualClock::new()))
}

#[tokio::test]
async fn shadow_mode_never_refuses_but_counts_and_reports() {
    let global = limiter(Quota::per_minute(1).with_burst(2));
    let layer = RateLimitLayer::builder(Global::new("global", global))
        .shadow(true)
        .build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer.clone());
    let client = HttpClient::new(serve(app, true).await);
    for _ in 0..5 {
        let answer = client.get("/", &[]).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert!(answer.header("retry-after").is_none());
    }
    let last = client.get("/", &[]).await;
    assert_eq!(ratelimit(&last), [("global".into(), 0, 60)]);
    let stats = layer.stats();
    assert_eq!(
        (stats.allowed, stats.shadow_denied, stats.denied),
        (2, 4, 0)
    );
}

#[tokio::test]
async fn the_refund_predicate_gives_the_token_back() {
    // Count only failed logins: a 200 is refunded, a 401 is charged.
    let global = limiter(Quota::per_minute(1).with_burst(2));
    let layer = RateLimitLayer::builder(Global::new("logins", global.clone()))
        .refund_if(|response| response.status.is_success())
        .unwrap()
        .build();
    let app = Router::new()
        .route("/ok", get(|| async { "welcome" }))
        .route("/bad", get(|| async { (AxumStatus::UNAUTHORIZED, "no") }))
        .layer(layer.clone());
    let client = HttpClient::new(serve(app, true).await);
    for _ in 0..5 {
        assert_eq!(client.get("/ok", &[]).await.status, StatusCode::OK);
    }
    assert_eq!(global.available(), 2);
    assert_eq!(
        client.get("/bad", &[]).await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        client.get("/bad", &[]).await.status,
        StatusCode::UNAUTHORIZED
    );
    let locked = client.get("/ok", &[]).await;
    assert_eq!(locked.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(layer.stats().refunded, 5);
}

#[tokio::test]
async fn a_cost_above_the_burst_is_refused_without_retry_after() {
    let global = limiter(Quota::per_second(10).with_burst(5));
    let layer = RateLimitLayer::builder(Global::new("bytes", global))
        .cost(|head| {
            let path = head.uri.path().trim_start_matches('/');
            path.parse().unwrap_or(1)
        })
        .problem_json(true)
        .build();
    let app = Router::new()
        .route("/{n}", get(|| async { "ok" }))
        .layer(layer);
    let client = HttpClient::new(serve(app, true).await);
    assert_eq!(client.get("/4", &[]).await.status, StatusCode::OK);
    let short = client.get("/2", &[]).await;
    assert_eq!(short.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(short.header("retry-after"), Some("1"));
    assert_eq!(
        short.header("content-type"),
        Some("application/problem+json")
    );
    assert!(short.body.contains(QUOTA_EXCEEDED), "{}", short.body);
    assert!(
        short.body.contains(r#""violated-policies":["bytes"]"#),
        "{}",
        short.body
    );
    let never = client.get("/6", &[]).await;
    assert_eq!(never.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(never.header("retry-after").is_none());
}

#[tokio::test]
async fn tiers_and_header_keys() {
    let clock = ManualClock::new();
    let keys = Arc::new(
        KeyedLimiter::<HeaderValue, _>::builder(Quota::per_minute(1).with_burst(1))
            .max_keys(100)
            .clock(clock)
            .build(),
    );
    let tiered = Keyed::new(
        "api-key",
        keys,
        HeaderKey::new(HeaderName::from_static("x-api-key")),
    )
    .quota_per_request(|_, key: &HeaderValue| {
        if key.as_bytes().starts_with(b"paid-") {
            Quota::per_minute(1).with_burst(3)
        } else {
            Quota::per_minute(1).with_burst(1)
        }
    });
    let layer = RateLimitLayer::builder(tiered)
        .missing_key(MissingKey::Deny(StatusCode::UNAUTHORIZED))
        .build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    let client = HttpClient::new(serve(app, true).await);
    let admitted = |key: &'static str| {
        let client = &client;
        async move {
            let mut n = 0;
            for _ in 0..5 {
                if client.get("/", &[("x-api-key", key)]).await.status == StatusCode::OK {
                    n += 1;
                }
            }
            n
        }
    };
    assert_eq!(admitted("free-1").await, 1);
    assert_eq!(admitted("paid-1").await, 3);
    let paid = client.get("/", &[("x-api-key", "paid-1")]).await;
    let policy = paid.header("ratelimit-policy").unwrap();
    assert_eq!(policy, r#""api-key";q=3;w=180"#);
    assert_eq!(client.get("/", &[]).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn skipping_a_missing_key_keeps_the_other_policies() {
    let keys = Arc::new(
        KeyedLimiter::<HeaderValue, _>::builder(Quota::per_minute(1))
            .clock(ManualClock::new())
            .build(),
    );
    let global = limiter(Quota::per_minute(1).with_burst(2));
    let api_key = HeaderKey::new(HeaderName::from_static("x-api-key"));
    let layer = RateLimitLayer::builder(
        Keyed::new("api-key", keys, api_key).and(Global::new("global", global)),
    )
    .missing_key(MissingKey::Skip)
    .build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer.clone());
    // No API key: that policy is skipped; the global one holds.
    let client = HttpClient::new(serve(app, true).await);
    assert_eq!(client.get("/", &[]).await.status, StatusCode::OK);
    let second = client.get("/", &[]).await;
    assert_eq!(ratelimit(&second), [("global".into(), 0, 60)]);
    assert_eq!(
        client.get("/", &[]).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
}

/// A key's bucket under a tier is its own: a key upgraded from free to paid starts the paid tier
/// full (a new bucket), and back on free finds the bucket it had spent there.
#[tokio::test]
async fn a_key_that_changes_tier_starts_the_new_tier_as_a_new_key() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let keys = Arc::new(
        KeyedLimiter::<HeaderValue, _>::builder(Quota::per_minute(1).with_burst(1))
            .max_keys(100)
            .clock(ManualClock::new())
            .build(),
    );
    let paid = Arc::new(AtomicBool::new(false));
    let plan = paid.clone();
    // The plan of the key, which the client cannot choose per request: here a switch the test
    // turns (Relaxed: one flag, read by the request the test then sends).
    let tiered = Keyed::new(
        "api-key",
        keys.clone(),
        HeaderKey::new(HeaderName::from_static("x-api-key")),
    )
    .quota_per_request(move |_, _: &HeaderValue| {
        if plan.load(Ordering::Relaxed) {
            Quota::per_minute(1).with_burst(3)
        } else {
            Quota::per_minute(1).with_burst(1)
        }
    });
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(RateLimitLayer::new(tiered));
    let client = HttpClient::new(serve(app, true).await);
    let key = [("x-api-key", "k-1")];
    let admitted = |n: usize| {
        let client = &client;
        async move {
            let mut ok = 0;
            for _ in 0..n {
                ok += usize::from(client.get("/", &key).await.status == StatusCode::OK);
            }
            ok
        }
    };
    assert_eq!(admitted(3).await, 1, "free: a burst of 1");
    paid.store(true, Ordering::Relaxed);
    assert_eq!(admitted(5).await, 3, "paid: a new bucket, full");
    paid.store(false, Ordering::Relaxed);
    assert_eq!(admitted(2).await, 0, "free again: the bucket it spent");
    assert_eq!(
        keys.len(),
        2,
        "one bucket per tier the key was charged under"
    );
}

#[tokio::test]
async fn a_tier_refund_gives_back_under_the_quota_charged() {
    // Paid keys: burst 3. A refunded 200 leaves the key full; a 401 is charged under burst 3.
    let keys = Arc::new(
        KeyedLimiter::<HeaderValue, _>::builder(Quota::per_minute(1).with_burst(1))
            .max_keys(100)
            .clock(ManualClock::new())
            .build(),
    );
    let tiered = Keyed::new(
        "api-key",
        keys.clone(),
        HeaderKey::new(HeaderName::from_static("x-api-key")),
    )
    .quota_per_request(|_, _: &HeaderValue| Quota::per_minute(1).with_burst(3));
    let layer = RateLimitLayer::builder(tiered)
        .refund_if(|response| response.status.is_success())
        .unwrap()
        .build();
    let app = Router::new()
        .route("/ok", get(|| async { "ok" }))
        .route("/bad", get(|| async { (AxumStatus::UNAUTHORIZED, "no") }))
        .layer(layer.clone());
    let client = HttpClient::new(serve(app, true).await);
    let paid = [("x-api-key", "paid-1")];
    for _ in 0..6 {
        assert_eq!(client.get("/ok", &paid).await.status, StatusCode::OK);
    }
    assert_eq!(layer.stats().refunded, 6);
    let statuses = [
        client.get("/bad", &paid).await.status,
        client.get("/bad", &paid).await.status,
        client.get("/bad", &paid).await.status,
        client.get("/bad", &paid).await.status,
    ];
    let refused = StatusCode::TOO_MANY_REQUESTS;
    let unauthorized = StatusCode::UNAUTHORIZED;
    assert_eq!(
        statuses,
        [unauthorized, unauthorized, unauthorized, refused]
    );
}

#[tokio::test]
async fn a_wrapped_body_answers_as_the_inner_one_does() {
    // `wrap_body` is for bodies the layer cannot write in; through axum it must answer alike.
    let global = limiter(Quota::per_minute(1).with_burst(1));
    let layer = RateLimitLayer::builder(Global::new("global", global))
        .wrap_body()
        .build();
    let app = Router::new()
        .route("/", get(|| async { "welcome" }))
        .layer(layer.clone());
    let client = HttpClient::new(serve(app, true).await);
    let admitted = client.get("/", &[]).await;
    assert_eq!(
        (admitted.status, admitted.body.as_str()),
        (StatusCode::OK, "welcome")
    );
    assert_eq!(ratelimit(&admitted), [("global".into(), 0, 60)]);
    let refused = client.get("/", &[]).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.header("retry-after"), Some("60"));
    assert!(
        refused.body.starts_with("Too Many Requests"),
        "{}",
        refused.body
    );
    let stats = layer.stats();
    assert_eq!((stats.allowed, stats.denied), (1, 1));
}

#[tokio::test]
async fn a_lone_keyed_policy_shows_a_partition_key_per_client() {
    let ips = Arc::new(
        KeyedLimiter::<IpAddr, _>::builder(Quota::per_minute(1).with_burst(3))
            .max_keys(100)
            .clock(ManualClock::new())
            .build(),
    );
    let behind_proxy = ClientIp::new().trust_proxies(
        ["127.0.0.0/8".parse().unwrap()],
        cellrate_http::ProxyHeader::XForwardedFor,
    );
    let layer = RateLimitLayer::builder(Keyed::new("per-ip", ips, behind_proxy))
        .partition_key(true)
        .build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    let client = HttpClient::new(serve(app, true).await);
    let pk = |answer: &http_support::Answer| {
        let value = answer.header("ratelimit").expect("a RateLimit field");
        value.split(";pk=").nth(1).expect("a pk").to_owned()
    };
    let (a1, a2) = (
        client.get_as("/", "192.0.2.1").await,
        client.get_as("/", "192.0.2.1").await,
    );
    let b = client.get_as("/", "192.0.2.2").await;
    assert_eq!(
        ratelimit(&a2)[0].1,
        1,
        "the second request of a client leaves 1"
    );
    assert_eq!(pk(&a1), pk(&a2), "one client, one partition key");
    assert_ne!(pk(&a1), pk(&b), "two clients, two partition keys");
    assert!(!pk(&a1).contains("192.0.2"), "{}", pk(&a1));
}

#[tokio::test]
async fn a_refusal_on_a_lagging_reading_pushes_back_for_the_lag_too() {
    use crate::common::LaggingClock;
    // 10 ms a token, 100 ms deep: the layer reads the coarse time, which lags by up to 2 ms.
    let quota = Quota::per_second(100).with_burst(10);
    let clock = LaggingClock::new(Duration::from_millis(1), Duration::from_millis(2));
    let keyed = || {
        Arc::new(
            KeyedLimiter::<IpAddr, _>::builder(quota)
                .max_keys(16)
                .clock(clock.clone())
                .build(),
        )
    };
    let global = Arc::new(Limiter::with_clock(quota, clock.clone()));
    let together = Keyed::new("ip", keyed(), ClientIp::new()).and(Global::new("global", global));
    let tiered = Keyed::new("tier", keyed(), ClientIp::new()).quota_per_request(move |_, _| quota);
    let app = Router::new()
        .route(
            "/together",
            get(|| async { "ok" }).layer(RateLimitLayer::builder(together).build()),
        )
        .route(
            "/tiered",
            get(|| async { "ok" }).layer(RateLimitLayer::builder(tiered).build()),
        );
    let client = HttpClient::new(serve(app, true).await);
    clock.set_lag(Duration::from_millis(1));
    for path in ["/together", "/tiered"] {
        for _ in 0..10 {
            assert_eq!(client.get(path, &[]).await.status, StatusCode::OK, "{path}");
        }
        let refused = client
            .get(path, &[("content-type", "application/grpc")])
            .await;
        // The next token in 10 ms, and 2 for the lag of the reading the retry will be decided on.
        assert_eq!(refused.header("grpc-status"), Some("8"), "{path}");
        assert_eq!(
            refused.header("grpc-retry-pushback-ms"),
            Some("12"),
            "{path}"
        );
    }
}

#[tokio::test]
async fn the_policy_header_states_a_quota_changed_while_running() {
    use cellrate::QuotaChange;
    let global = limiter(Quota::per_second(10).with_burst(10));
    let ips = Arc::new(
        KeyedLimiter::<IpAddr, _>::builder(Quota::per_minute(1).with_burst(5))
            .clock(ManualClock::new())
            .build(),
    );
    let alone = RateLimitLayer::builder(Global::new("g", global.clone()))
        .legacy_headers(true)
        .build();
    let both = RateLimitLayer::builder(
        Keyed::new("ip", ips.clone(), ClientIp::new()).and(Global::new("g", global.clone())),
    )
    .build();
    let app = Router::new()
        .route("/alone", get(|| async { "ok" }).layer(alone))
        .route("/both", get(|| async { "ok" }).layer(both));
    let client = HttpClient::new(serve(app, true).await);
    let policy =
        |answer: &http_support::Answer| answer.header("ratelimit-policy").unwrap().to_owned();
    assert_eq!(policy(&client.get("/alone", &[]).await), r#""g";q=10;w=1"#);

    global.set_quota(Quota::per_second(1).with_burst(2), QuotaChange::Full);
    let first = client.get("/alone", &[]).await;
    assert_eq!(policy(&first), r#""g";q=2;w=2"#);
    assert_eq!(first.header("x-ratelimit-limit"), Some("2"));
    let refused = client.get("/alone", &[]).await;
    assert_eq!(refused.status, StatusCode::OK);
    let refused = client.get("/alone", &[]).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(policy(&refused), r#""g";q=2;w=2"#);
    // Each policy of a pair is stated with its own quota in force (the global one is spent):
    // the global one's changed, the keyed one's as built (a keyed limiter's quota is fixed).
    let pair = client.get("/both", &[]).await;
    assert_eq!(policy(&pair), r#""ip";q=5;w=300, "g";q=2;w=2"#);
}
