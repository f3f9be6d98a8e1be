//! The JSON body of a `POST`: its type checked, its size bounded (`--max-message-bytes`, by
//! the router's body limit: a larger body is answered 413 before it is read whole), and its
//! text read into `T`, every failure a 4xx whose body says why; and the JSON answers.

use axum::body::Bytes;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A request refused before it was decided: its status and reason.
#[derive(Debug)]
pub(crate) struct Refusal(pub StatusCode, pub String);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut text = self.1;
        text.push('\n');
        (
            self.0,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            text,
        )
            .into_response()
    }
}

/// `body` read as `T`. The types taken: none, `application/json` (and `*/*+json`), and
/// `application/x-www-form-urlencoded`, which `curl --data` sends, as the reference server's
/// own example of `/json` does; any other is answered 415.
pub(crate) fn json<T: DeserializeOwned>(headers: &HeaderMap, body: &Bytes) -> Result<T, Refusal> {
    if let Some(value) = headers.get(header::CONTENT_TYPE) {
        let essence = value
            .to_str()
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let json = essence == "application/json" || essence.ends_with("+json");
        if !json && essence != "application/x-www-form-urlencoded" {
            return Err(Refusal(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("the body must be JSON (Content-Type: application/json), not {essence:?}"),
            ));
        }
    }
    serde_json::from_slice(body)
        .map_err(|e| Refusal(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))
}

/// `value` as a JSON answer with `status`.
pub(crate) fn answer<T: Serialize>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(text) => (status, [(header::CONTENT_TYPE, "application/json")], text).into_response(),
        Err(e) => Refusal(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
