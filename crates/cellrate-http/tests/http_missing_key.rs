//! Requests without a key, over a real loopback server and client: a 4xx by default, the
//! choice made per policy, and "skip" only for a key that is really absent.
#![cfg(feature = "axum")]

use crate::http_support;

use axum::{routing::get, Router};
use cellrate::{KeyedLimiter, ManualClock, Quota};
use cellrate_http::{ClientIp, HeaderKey, Keyed, MissingKey, ProxyHeader, RateLimitLayer};
use http::{HeaderName, HeaderValue, StatusCode};
use http_support::{serve, HttpClient};
use std::net::IpAddr;
use std::sync::Arc;

fn keyed<K: std::hash::Hash + Eq + Send + Sync + 'static>(
    burst: u32,
) -> Arc<KeyedLimiter<K, ManualClock>> {
    Arc::new(
        KeyedLimiter::builder(Quota::per_minute(1).with_burst(burst))
            .clock(ManualClock::new())
            .build(),
    )
}

fn api_key() -> HeaderKey {
    HeaderKey::new(HeaderName::from_static("x-api-key"))
}

fn behind_loopback_proxy() -> ClientIp {
    ClientIp::new().trust_proxies(["127.0.0.0/8".parse().unwrap()], ProxyHeader::Forwarded)
}

async fn client_of(layer: RateLimitLayer<impl cellrate_http::Backend>) -> HttpClient {
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    HttpClient::new(serve(app, true).await)
}

#[tokio::test]
async fn a_missing_key_header_is_a_400_by_default() {
    let layer = RateLimitLayer::new(Keyed::new("api-key", keyed::<HeaderValue>(5), api_key()));
    let client = client_of(layer).await;
    let answer = client.get("/", &[]).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
    assert_eq!(
        client.get("/", &[("x-api-key", "k")]).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn skipping_is_chosen_per_policy() {
    // The API key is optional; the per-IP limit (burst 2) holds with or without it.
    let layer = RateLimitLayer::new(Keyed::new("ip", keyed::<IpAddr>(2), ClientIp::new()).and(
        Keyed::new("api-key", keyed::<HeaderValue>(5), api_key()).missing_key(MissingKey::Skip),
    ));
    let client = client_of(layer).await;
    let statuses: Vec<StatusCode> = [
        client.get("/", &[]).await.status,
        client.get("/", &[]).await.status,
        client.get("/", &[]).await.status,
    ]
    .into();
    assert_eq!(
        statuses,
        [
            StatusCode::OK,
            StatusCode::OK,
            StatusCode::TOO_MANY_REQUESTS
        ]
    );
}

#[tokio::test]
async fn skip_never_skips_a_hop_a_trusted_proxy_wrote_unreadably() {
    let ip =
        Keyed::new("ip", keyed::<IpAddr>(1), behind_loopback_proxy()).missing_key(MissingKey::Skip);
    let client = client_of(RateLimitLayer::new(ip)).await;
    for hop in ["for=unknown", "for=_hidden", "for=garbage"] {
        for _ in 0..3 {
            let answer = client.get("/", &[("forwarded", hop)]).await;
            assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{hop}");
        }
    }
    // The layer-wide choice is no way around it either.
    let ip = Keyed::new("ip", keyed::<IpAddr>(1), behind_loopback_proxy());
    let layer = RateLimitLayer::builder(ip)
        .missing_key(MissingKey::Skip)
        .build();
    let client = client_of(layer).await;
    let answer = client.get("/", &[("forwarded", "for=unknown")]).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_policys_own_status_is_answered() {
    let layer = RateLimitLayer::builder(
        Keyed::new("ip", keyed::<IpAddr>(5), ClientIp::new()).and(
            Keyed::new("api-key", keyed::<HeaderValue>(5), api_key())
                .missing_key(MissingKey::Deny(StatusCode::UNAUTHORIZED)),
        ),
    )
    .missing_key(MissingKey::Deny(StatusCode::FORBIDDEN))
    .build();
    let client = client_of(layer).await;
    assert_eq!(client.get("/", &[]).await.status, StatusCode::UNAUTHORIZED);
}
