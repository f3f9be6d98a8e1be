//! The layer's answers to gRPC calls: trailers-only responses (HTTP 200, the status in the
//! headers), in the content-type family of the call (gRPC or gRPC-Web).

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use http::{HeaderMap, Response, StatusCode};

static GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
static GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");

/// The protocol of a gRPC call, read from its `content-type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grpc {
    /// `application/grpc`, `application/grpc+proto`, ...
    Plain,
    /// `application/grpc-web`, `application/grpc-web+proto`, ...
    Web,
    /// `application/grpc-web-text` (base64 frames).
    WebText,
}

impl Grpc {
    /// The protocol of a request, `None` if it is not a gRPC call. Media types are
    /// case-insensitive (RFC 9110, 8.3.1).
    pub(crate) fn of(headers: &HeaderMap) -> Option<Grpc> {
        let value = headers.get(CONTENT_TYPE)?.as_bytes();
        let is = |prefix: &[u8]| {
            value.len() >= prefix.len() && value[..prefix.len()].eq_ignore_ascii_case(prefix)
        };
        // The longest family first; each must end there or go on with `+` or `;`.
        let rest = |prefix: &[u8]| match value.get(prefix.len()) {
            None => true,
            Some(b) => matches!(b, b'+' | b';' | b' ' | b'\t'),
        };
        [
            (&b"application/grpc-web-text"[..], Grpc::WebText),
            (&b"application/grpc-web"[..], Grpc::Web),
            (&b"application/grpc"[..], Grpc::Plain),
        ]
        .into_iter()
        .find(|(prefix, _)| is(prefix) && rest(prefix))
        .map(|(_, kind)| kind)
    }

    /// The content type of an answer (trailers-only: no message, so no sub-type).
    fn content_type(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Grpc::Plain => "application/grpc",
            Grpc::Web => "application/grpc-web",
            Grpc::WebText => "application/grpc-web-text",
        })
    }
}

/// The gRPC status code for an HTTP status the layer would answer with: the mapping of
/// gRPC's `doc/http-grpc-status-mapping.md`, and 3 `INVALID_ARGUMENT` for a 400 (a key the
/// client did not send or that cannot be read: the call's fault, not the server's).
pub(crate) fn code_of(status: StatusCode) -> u8 {
    match status.as_u16() {
        400 => 3,        // INVALID_ARGUMENT
        401 => 16,       // UNAUTHENTICATED
        403 => 7,        // PERMISSION_DENIED
        404 => 12,       // UNIMPLEMENTED
        429 => 8,        // RESOURCE_EXHAUSTED
        500 => 13,       // INTERNAL
        502..=504 => 14, // UNAVAILABLE
        _ => 2,          // UNKNOWN
    }
}

/// A trailers-only gRPC answer: HTTP 200 with `grpc-status` `code` and `grpc-message`
/// `message` (printable ASCII without `%`, valid as it is; gRPC percent-encodes others).
pub(crate) fn answer(kind: Grpc, code: u8, message: &str) -> Response<Bytes> {
    let mut response = Response::new(Bytes::new());
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, kind.content_type());
    headers.insert(GRPC_STATUS.clone(), HeaderValue::from(u16::from(code)));
    debug_assert!(message
        .bytes()
        .all(|b| (b' '..=b'~').contains(&b) && b != b'%'));
    if let Ok(message) = HeaderValue::try_from(message) {
        headers.insert(GRPC_MESSAGE.clone(), message);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(content_type: &'static str) -> Option<Grpc> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        Grpc::of(&headers)
    }

    #[test]
    fn content_types_are_matched_case_insensitively_by_family() {
        assert_eq!(kind("application/grpc"), Some(Grpc::Plain));
        assert_eq!(kind("Application/GRPC+proto"), Some(Grpc::Plain));
        assert_eq!(kind("application/grpc-web+proto"), Some(Grpc::Web));
        assert_eq!(kind("application/GRPC-WEB-TEXT"), Some(Grpc::WebText));
        assert_eq!(kind("application/grpcx"), None);
        assert_eq!(kind("text/plain"), None);
    }
}
