//! The HTTP port: `GET /metrics` (Prometheus text), `GET /healthz` (the process answers) and
//! `GET /readyz` (a config is in force and the server is not shutting down); and the JSON
//! endpoints, `POST /json` (`rls_json.rs`) and `POST /throttle` (`throttle.rs`), here or on
//! `--json-port`.

mod body;
mod proto_json;
mod rls_json;
mod throttle;

use crate::server::Server;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use tokio::sync::watch;

#[derive(Clone)]
struct Http {
    server: Server,
    stopping: watch::Receiver<bool>,
}

/// The routes of the HTTP port, with the JSON endpoints if `with_json`.
pub(crate) fn router(server: Server, stopping: watch::Receiver<bool>, with_json: bool) -> Router {
    let probes = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "OK\n" }))
        .route("/readyz", get(ready))
        .with_state(Http {
            server: server.clone(),
            stopping,
        });
    if with_json {
        probes.merge(json_router(server))
    } else {
        probes
    }
}

/// `POST /json` and `POST /throttle`, their bodies at most `--max-message-bytes`.
pub(crate) fn json_router(server: Server) -> Router {
    let max = server.settings().max_message_bytes;
    Router::new()
        .route("/json", post(rls_json::rls_json))
        .route("/throttle", post(throttle::throttle))
        .layer(DefaultBodyLimit::max(max))
        .with_state(server)
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
