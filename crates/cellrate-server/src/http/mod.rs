//! The HTTP port: `GET /metrics` (Prometheus text), `GET /healthz` (the process answers) and
//! `GET /readyz` (a config is in force and the server is not shutting down).

use crate::server::Server;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tokio::sync::watch;

#[derive(Clone)]
struct Http {
    server: Server,
    stopping: watch::Receiver<bool>,
}

/// The routes of the HTTP port.
pub(crate) fn router(server: Server, stopping: watch::Receiver<bool>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "OK\n" }))
        .route("/readyz", get(ready))
        .with_state(Http { server, stopping })
}

async fn metrics(State(http): State<Http>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        http.server.metrics_text(),
    )
}

async fn ready(State(http): State<Http>) -> impl IntoResponse {
    if *http.stopping.borrow() {
        (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")
    } else {
        (StatusCode::OK, "OK\n")
    }
}
