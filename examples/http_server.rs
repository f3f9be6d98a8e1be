//! An axum service limited per client IP and globally. Prints the address it listens on, then
//! serves until stopped:
//!
//! ```sh
//! cargo run --example http_server --features http
//! for i in $(seq 8); do curl -s -o /dev/null -w '%{http_code} ' http://127.0.0.1:3000/; done
//! curl -i http://127.0.0.1:3000/
//! ```
//!
//! The address can be set as the first argument (default 127.0.0.1:3000).

use axum::{routing::get, Router};
use cellrate::{KeyedLimiter, Limiter, Quota};
use cellrate_http::{ClientIp, Global, Keyed, RateLimitLayer};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3000".into());
    // Per client: a burst of 5, then 1 request per second. All clients: 100 per second.
    let per_ip = KeyedLimiter::<IpAddr>::builder(Quota::per_second(1).with_burst(5))
        .max_keys(100_000)
        .build();
    let global = Limiter::new(Quota::per_second(100));
    let limit = RateLimitLayer::new(
        Keyed::new("per-ip", Arc::new(per_ip), ClientIp::new())
            .and(Global::new("global", Arc::new(global))),
    );
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
