//! `POST /json`: an RLS request in the proto3 JSON mapping, decided as `ShouldRateLimit`
//! decides it, answered in the same mapping: 200 when OK, 429 when over the limit (as the
//! reference server answers), 400 with the reason for a request that is not valid.

use super::body::{self, Refusal};
use super::proto_json::{Request, Response};
use crate::server::Server;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response as HttpResponse;

/// The handler.
pub(crate) async fn rls_json(
    State(server): State<Server>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<HttpResponse, Refusal> {
    let request: Request = body::json(&headers, &body)?;
    let request = request
        .into_proto()
        .map_err(|e| Refusal(StatusCode::BAD_REQUEST, e))?;
    let response = server
        .should_rate_limit(request)
        .await
        .map_err(|status| Refusal(StatusCode::BAD_REQUEST, status.message().to_owned()))?;
    let code = if response.overall_code == 2 {
        StatusCode::TOO_MANY_REQUESTS
    } else {
        StatusCode::OK
    };
    Ok(body::answer(code, &Response::of(&response)))
}
