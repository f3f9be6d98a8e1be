//! An axum service limited per API key, with a quota per plan: keys of the pro plan get 20
//! requests per second (burst 40), every other key 2 per second (burst 5). A request without
//! an `x-api-key` header is answered 401 Unauthorized, not charged to anyone.
//!
//! ```sh
//! cargo run --example api_key_tiers --features http
//! curl -i http://127.0.0.1:3000/                          # 401: no key
//! for i in $(seq 8); do curl -s -o /dev/null -w '%{http_code} ' -H 'x-api-key: free-1' http://127.0.0.1:3000/; done
//! for i in $(seq 8); do curl -s -o /dev/null -w '%{http_code} ' -H 'x-api-key: pro-1' http://127.0.0.1:3000/; done
//! ```
//!
//! The plan here is read from the key's spelling to keep the example short; a real service
//! looks the key up (after checking it is valid) and limits unknown keys by client IP as well,
//! since anyone can invent keys. The address can be set as the first argument.

use axum::{routing::get, Router};
use cellrate::{KeyedLimiter, Quota};
use cellrate_http::{HeaderKey, Keyed, MissingKey, RateLimitLayer, RequestHead};
use http::{HeaderName, HeaderValue, StatusCode};
use std::net::SocketAddr;
use std::sync::Arc;

/// The quota of the plan a key belongs to.
fn plan_of(key: &HeaderValue) -> Quota {
    if key.as_bytes().starts_with(b"pro-") {
        Quota::per_second(20).with_burst(40)
    } else {
        Quota::per_second(2).with_burst(5)
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3000".into());
    // The table's own quota is the free plan's; each request is charged to its key's bucket
    // under the key's plan (one bucket per plan: a key moved to the pro plan starts it full).
    let per_key = KeyedLimiter::<HeaderValue>::builder(Quota::per_second(2).with_burst(5))
        .max_keys(100_000)
        .build();
    let extractor = HeaderKey::new(HeaderName::from_static("x-api-key"));
    let policy = Keyed::new("per-key", Arc::new(per_key), extractor)
        .quota_per_request(|_: &RequestHead<'_>, key: &HeaderValue| plan_of(key));
    let limit = RateLimitLayer::builder(policy)
        .missing_key(MissingKey::Deny(StatusCode::UNAUTHORIZED))
        .build();
    let app = Router::new()
        .route("/", get(|| async { "hello\n" }))
        .layer(limit);

    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await
}
