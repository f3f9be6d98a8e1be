//! The layer's own answers: 429 (plain or problem+json), gRPC `RESOURCE_EXHAUSTED`, and the
//! answer to a request without a key.

use super::backend::{Backend, Verdict};
use super::denial::Denial;
#[cfg(feature = "redis")]
use super::fault::Fault;
use super::fault::{body_text, FaultLog};
use super::grpc::{self, Grpc};
use super::headers::{push_quoted, Fields};
use super::key::{KeyError, MissingKey, NO_PEER_ADDRESS_FIX};
use super::shared::Shared;
use super::state::{ceil_millis_of, ceil_secs_of};
use bytes::Bytes;
use core::time::Duration;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::{Response, StatusCode};

/// The problem type of draft-ietf-httpapi-ratelimit-headers for a refused request.
pub const QUOTA_EXCEEDED: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";

static GRPC_PUSHBACK: HeaderName = HeaderName::from_static("grpc-retry-pushback-ms");

/// The answer to a refused request.
pub(crate) fn deny<B: Backend>(
    shared: &Shared<B>,
    verdict: &Verdict<B::Ticket>,
    retry_after: Option<Duration>,
    cost: u32,
    kind: Option<Grpc>,
) -> Response<Bytes> {
    let violated: Vec<&str> = verdict.violated(&shared.policies, cost).collect();
    let grpc = kind.is_some();
    let refusal = Denial {
        retry_after,
        grpc,
        violated: &violated,
    };
    let mut response = match (&shared.options.denial, kind) {
        (Some(respond), _) => respond(&refusal),
        (None, Some(kind)) => grpc_denial(kind, retry_after),
        (None, None) if shared.options.problem_json => problem(&refusal),
        (None, None) => plain(StatusCode::TOO_MANY_REQUESTS, too_many(retry_after)),
    };
    let headers = response.headers_mut();
    if let (Some(wait), false) = (retry_after, grpc) {
        // Whole seconds, rounded up: a client that waits this long is admitted.
        if !headers.contains_key(RETRY_AFTER) {
            headers.insert(RETRY_AFTER, HeaderValue::from(ceil_secs_of(wait)));
        }
    }
    let fields = Fields::new(
        shared.options.on_denied,
        &shared.policies,
        shared.static_policy,
        &verdict.states,
        &verdict.quotas,
    );
    fields.insert_missing(headers);
    response
}

/// A response with a `text/plain` body (none when `text` is empty).
pub(crate) fn plain(status: StatusCode, text: String) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn too_many(retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(wait) => format!("Too Many Requests: retry after {} s\n", ceil_secs_of(wait)),
        None => "Too Many Requests: the request costs more than the limit allows\n".into(),
    }
}

fn problem(refusal: &Denial<'_>) -> Response<Bytes> {
    let mut policies = String::new();
    for (i, name) in refusal.violated.iter().enumerate() {
        if i > 0 {
            policies.push(',');
        }
        push_quoted(&mut policies, name);
    }
    let detail = too_many(refusal.retry_after);
    let body = format!(
        "{{\"type\":\"{QUOTA_EXCEEDED}\",\"title\":\"Request cannot be satisfied as assigned \
         quota has been exceeded\",\"status\":429,\"detail\":\"{}\",\"violated-policies\":[{policies}]}}",
        detail.trim_end()
    );
    let mut response = Response::new(Bytes::from(body));
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    response
}
/// A trailers-only gRPC answer: status 8, the pushback in milliseconds rounded up (-1, "do
/// not retry", when the request can never pass).
fn grpc_denial(kind: Grpc, retry_after: Option<Duration>) -> Response<Bytes> {
    let (message, pushback) = match retry_after {
        Some(wait) => {
            let ms = ceil_millis_of(wait);
            (format!("rate limited: retry after {ms} ms"), ms.to_string())
        }
        None => (
            "rate limited: the call costs more than the limit allows".into(),
            "-1".into(),
        ),
    };
    let mut response = grpc::answer(kind, 8, &message);
    let pushback = HeaderValue::try_from(pushback).expect("an integer is a header value");
    response
        .headers_mut()
        .insert(GRPC_PUSHBACK.clone(), pushback);
    response
}

/// The answer to a request without a key (`error`) under the policy's `choice`: a 4xx logged
/// at debug level, or a 500 for a fault of the configuration: no peer address (logged in
/// `faults`, once at error level, with the fix) or [`MissingKey::InternalError`] (logged at
/// error level); for a gRPC call, its trailers-only equivalent.
#[cold]
pub(crate) fn no_key(
    error: &KeyError,
    choice: MissingKey,
    kind: Option<Grpc>,
    faults: &FaultLog,
) -> Response<Bytes> {
    let status = match (error, choice) {
        (KeyError::NoPeerAddress, _) | (_, MissingKey::InternalError) => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
        (_, MissingKey::Deny(status)) => status,
        // Skip reaches here only for a key that is there but cannot be read.
        (_, MissingKey::Skip) => StatusCode::BAD_REQUEST,
    };
    let text = if let KeyError::NoPeerAddress = error {
        let what = "no client address in the request extensions";
        faults.log(&what, NO_PEER_ADDRESS_FIX, "500");
        let why = body_text(&what, NO_PEER_ADDRESS_FIX);
        format!("no rate limit key for this request: {why}")
    } else if status.is_server_error() {
        tracing::error!("rate limit: no key for the request, answered {status}: {error}");
        "no rate limit key for this request (the server log says why)".to_owned()
    } else {
        tracing::debug!("rate limit: request without a key answered {status}: {error}");
        "no rate limit key in this request".to_owned()
    };
    match kind {
        Some(kind) => grpc::answer(kind, grpc::code_of(status), GRPC_NO_KEY),
        None => {
            let reason = status.canonical_reason().unwrap_or("Error");
            plain(status, format!("{reason}: {text}\n"))
        }
    }
}

/// The message of a gRPC answer for want of a key: the same for every call (a gRPC message is
/// printable ASCII, and the log has the rest).
const GRPC_NO_KEY: &str = "no rate limit key for this call";

/// The answer to a request the layer could not decide for a fault of the deployment: 500,
/// or gRPC `INTERNAL`, logged in `faults`.
#[cfg(feature = "redis")]
#[cold]
pub(crate) fn fault(fault: &Fault, kind: Option<Grpc>, faults: &FaultLog) -> Response<Bytes> {
    faults.log(&fault.what, fault.fix, "500");
    match kind {
        Some(kind) => grpc::answer(kind, 13, "rate limit misconfigured (see the server log)"),
        None => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "Internal Server Error: {}\n",
                body_text(&fault.what, fault.fix)
            ),
        ),
    }
}
