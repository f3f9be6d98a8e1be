//! What an admitted request is charged, over a real loopback server and client: a cost from
//! `Content-Length`, and a request whose response never comes.
#![cfg(feature = "axum")]

use crate::http_support;

use axum::{routing::get, Router};
use cellrate::{Limiter, ManualClock, Quota};
use cellrate_http::{content_length_cost, Global, RateLimitLayer};
use http::StatusCode;
use http_support::{serve, HttpClient};
use std::sync::Arc;

fn limiter(burst: u32) -> Arc<Limiter<ManualClock>> {
    Arc::new(Limiter::with_clock(
        Quota::per_minute(1).with_burst(burst),
        ManualClock::new(),
    ))
}

#[tokio::test]
async fn a_request_without_a_length_is_charged_the_most() {
    let global = limiter(8);
    let layer = RateLimitLayer::builder(Global::new("bytes", global.clone()))
        .cost(content_length_cost(1_024, 5))
        .build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    let client = HttpClient::new(serve(app, true).await);
    // A GET without a body states no length: 5 of the 8 tokens, then 3 are too few.
    assert_eq!(client.get("/", &[]).await.status, StatusCode::OK);
    let second = client.get("/", &[]).await;
    assert_eq!(second.status, StatusCode::TOO_MANY_REQUESTS);
}

/// A server whose `/hang-up` admits the request, then drops its future (the handler panics
/// and the connection's task unwinds), and whose `/` answers.
async fn dropping_server(refund_on_drop: bool) -> HttpClient {
    let global = limiter(1);
    let layer = RateLimitLayer::builder(Global::new("global", global))
        .refund_on_drop(refund_on_drop)
        .unwrap()
        .build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .route(
            "/hang-up",
            get(|| async {
                if true {
                    panic!("the request is dropped after its admission");
                }
                "never"
            }),
        )
        .layer(layer);
    HttpClient::new(serve(app, true).await)
}

#[tokio::test]
async fn a_request_dropped_after_admission_is_charged_unless_refunded_on_drop() {
    let client = dropping_server(false).await;
    assert!(client.try_get("/hang-up").await.is_err(), "no response");
    assert_eq!(
        client.get("/", &[]).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );

    let client = dropping_server(true).await;
    for _ in 0..3 {
        assert!(client.try_get("/hang-up").await.is_err(), "no response");
    }
    assert_eq!(client.get("/", &[]).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_refund_predicate_that_panics_gives_nothing_back_even_refunding_on_drop() {
    // A response came: only the predicate may give its tokens back, and it never says yes.
    let global = limiter(1);
    let layer = RateLimitLayer::builder(Global::new("global", global))
        .refund_if(|_| panic!("a predicate that fails"))
        .unwrap()
        .refund_on_drop(true)
        .unwrap()
        .build();
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer.clone());
    let client = HttpClient::new(serve(app, true).await);
    assert!(client.try_get("/").await.is_err(), "no response");
    assert_eq!(layer.stats().refunded, 0);
    assert_eq!(
        client.get("/", &[]).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
}
