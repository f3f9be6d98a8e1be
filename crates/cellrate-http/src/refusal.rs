//! The layer's own answers: 429 (plain or problem+json), gRPC `RESOURCE_EXHAUSTED`, and the
//! answer to a request without a key.

use super::backend::{Backend, Verdict};
use super::headers::{push_quoted, Fields};
use super::layer::Shared;
use super::state::{ceil_millis_of, ceil_secs_of};
use bytes::Bytes;
use core::time::Duration;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::{Response, StatusCode};

/// The problem type of draft-ietf-httpapi-ratelimit-headers for a refused request.
pub const QUOTA_EXCEEDED: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";

static GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
static GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");
static GRPC_PUSHBACK: HeaderName = HeaderName::from_static("grpc-retry-pushback-ms");

/// A refused request, for a custom refusal response
/// ([`RateLimitBuilder::on_refused`](super::RateLimitBuilder::on_refused)).
#[derive(Debug)]
pub struct Refusal<'a> {
    retry_after: Option<Duration>,
    grpc: bool,
    violated: &'a [&'a str],
}

impl Refusal<'_> {
    /// When the same request would pass; `None` if it never can (its cost exceeds a burst).
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// Whether the request is a gRPC call (`content-type: application/grpc...`).
    pub fn is_grpc(&self) -> bool {
        self.grpc
    }

    /// The names of the policies that refused it.
    pub fn violated_policies(&self) -> &[&str] {
        self.violated
    }
}

/// The answer to a refused request.
pub(crate) fn refuse<B: Backend>(
    shared: &Shared<B>,
    verdict: &Verdict<B::Ticket>,
    retry_after: Option<Duration>,
    cost: u32,
    grpc: bool,
) -> Response<Bytes> {
    let violated: Vec<&str> = verdict.violated(&shared.policies, cost).collect();
    let refusal = Refusal {
        retry_after,
        grpc,
        violated: &violated,
    };
    let mut response = match &shared.options.refusal {
        Some(respond) => respond(&refusal),
        None if grpc => grpc_refusal(retry_after),
        None if shared.options.problem_json => problem(&refusal),
        None => plain(StatusCode::TOO_MANY_REQUESTS, too_many(retry_after)),
    };
    let headers = response.headers_mut();
    if let (Some(wait), false) = (retry_after, grpc) {
        // Whole seconds, rounded up: a client that waits this long is admitted.
        if !headers.contains_key(RETRY_AFTER) {
            headers.insert(RETRY_AFTER, HeaderValue::from(ceil_secs_of(wait)));
        }
    }
    let fields = Fields::new(
        shared.options.on_refused,
        &shared.policies,
        &shared.static_policy,
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

fn problem(refusal: &Refusal<'_>) -> Response<Bytes> {
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
fn grpc_refusal(retry_after: Option<Duration>) -> Response<Bytes> {
    let mut response = Response::new(Bytes::new());
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(GRPC_STATUS.clone(), HeaderValue::from_static("8"));
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
    // Both are printable ASCII with no '%': valid as they are (gRPC percent-encodes others).
    headers.insert(GRPC_MESSAGE.clone(), header(message));
    headers.insert(GRPC_PUSHBACK.clone(), header(pushback));
    response
}

fn header(text: String) -> HeaderValue {
    HeaderValue::try_from(text).expect("printable ASCII")
}

/// Whether a request is a gRPC call.
pub(crate) fn is_grpc(headers: &http::HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}
