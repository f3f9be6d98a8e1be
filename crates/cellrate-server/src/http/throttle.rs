//! `POST /throttle`: `{"key", "max_burst", "count_per_period", "period", "quantity"}`
//! (quantity 1 if left out), decided as `CL.THROTTLE` decides it, in the same buckets, and
//! answered with its five figures by name: 200 when allowed, 429 with `Retry-After` when
//! limited, 400 with the reason (redis-cell's error text) for arguments it refuses.

use super::body::{self, Refusal};
use crate::server::Server;
use crate::throttle::checked;
use crate::throttle::counts::{Outcome, Via};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use serde::{Deserialize, Serialize};

/// The body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    key: String,
    max_burst: i64,
    count_per_period: i64,
    period: i64,
    #[serde(default = "one")]
    quantity: i64,
}

fn one() -> i64 {
    1
}

/// The answer: `CL.THROTTLE`'s reply, by name.
#[derive(Serialize)]
struct Answer {
    limited: bool,
    limit: i64,
    remaining: i64,
    retry_after: i64,
    reset_after: i64,
}

/// The handler.
pub(crate) async fn throttle(
    State(server): State<Server>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Refusal> {
    let counts = &server.globals().throttle;
    let call: Call = body::json(&headers, &body).inspect_err(|_| {
        counts.call(Via::Http, Outcome::Invalid);
    })?;
    let (rate, quantity) = checked(
        call.max_burst,
        call.count_per_period,
        call.period,
        call.quantity,
    )
    .map_err(|e| {
        counts.call(Via::Http, Outcome::Invalid);
        Refusal(StatusCode::BAD_REQUEST, e.text())
    })?;
    let reply = server
        .store()
        .throttle(call.key.as_bytes(), &rate, quantity)
        .await;
    let answer = Answer {
        limited: reply.limited,
        limit: reply.limit,
        remaining: reply.remaining,
        retry_after: reply.retry_after,
        reset_after: reply.reset_after,
    };
    if !reply.limited {
        counts.call(Via::Http, Outcome::Allowed);
        return Ok(body::answer(StatusCode::OK, &answer));
    }
    counts.call(Via::Http, Outcome::Limited);
    let mut response = body::answer(StatusCode::TOO_MANY_REQUESTS, &answer);
    if reply.retry_after >= 0 {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, reply.retry_after.into());
    }
    Ok(response)
}
