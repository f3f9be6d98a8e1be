//! Keys: which bucket a request is charged to. [`KeyExtractor`] and the simple extractors
//! (a header, a closure, one shared key); the client address is [`ClientIp`](super::ClientIp).

use core::fmt;
use core::hash::Hash;
use http::header::{HeaderName, HeaderValue};
use http::{Extensions, HeaderMap, Method, Request, Uri};
use std::borrow::Cow;

/// What a key extractor sees of a request: everything but the body.
#[derive(Clone, Copy, Debug)]
pub struct RequestHead<'a> {
    /// The method.
    pub method: &'a Method,
    /// The URI (for a route or a query parameter).
    pub uri: &'a Uri,
    /// The headers.
    pub headers: &'a HeaderMap,
    /// The extensions: axum's `ConnectInfo`, a `SocketAddr` set by a hyper server, a user id
    /// set by an authentication layer that runs first.
    pub extensions: &'a Extensions,
}

impl<'a> RequestHead<'a> {
    /// The head of `req`.
    pub fn of<B>(req: &'a Request<B>) -> RequestHead<'a> {
        RequestHead {
            method: req.method(),
            uri: req.uri(),
            headers: req.headers(),
            extensions: req.extensions(),
        }
    }
}

/// Finds the key of a request: the client address, an API key, a user id.
///
/// The key is owned (an `IpAddr`, a `HeaderValue`, whose clone shares the request's bytes) so
/// that a refund after the response can find the bucket again; it is hashed into the keyed
/// limiter's fingerprint, never stored there.
pub trait KeyExtractor: Send + Sync + 'static {
    /// The key: the `K` of the `KeyedLimiter<K>` it feeds.
    type Key: Hash + Eq + Clone + Send + Sync + 'static;

    /// The key of this request, or why there is none.
    fn extract(&self, req: &RequestHead<'_>) -> Result<Self::Key, KeyError>;
}

/// What mends [`KeyError::NoPeerAddress`].
pub(crate) const NO_PEER_ADDRESS_FIX: &str = "with axum, serve \
    `router.into_make_service_with_connect_info::<SocketAddr>()` and enable cellrate-http's \
    `axum` feature; with tonic, enable its `tonic` feature; with hyper, insert the peer's \
    `SocketAddr` into each request's extensions";

/// Why a request has no key. Its `Display` says how to fix the configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// The request carries no peer address: the server did not record it.
    NoPeerAddress,
    /// The header the key is read from is absent.
    MissingHeader(HeaderName),
    /// A header the key is read from cannot be parsed (written by a trusted proxy, so the
    /// client cannot be told apart).
    InvalidHeader(HeaderName),
    /// A user-supplied extractor's reason.
    Other(Cow<'static, str>),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::NoPeerAddress => write!(
                f,
                "no client address in the request extensions: {NO_PEER_ADDRESS_FIX}"
            ),
            KeyError::MissingHeader(name) => write!(f, "the key header `{name}` is absent"),
            KeyError::InvalidHeader(name) => write!(
                f,
                "the header `{name}` from a trusted proxy cannot be parsed: no client address"
            ),
            KeyError::Other(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for KeyError {}

impl KeyError {
    /// Whether the key is really absent (the header is not there, or a user's extractor found
    /// none), so that [`MissingKey::Skip`] may let the request through. A header that is there
    /// but cannot be read (a hop a trusted proxy wrote as `unknown`, garbage) is not absent:
    /// skipping it would let the client turn the limit off. No peer address is not absent
    /// either: the server does not record it, a fault of the configuration. An extractor of
    /// one's own that finds a key it cannot read should say so with
    /// [`InvalidHeader`](KeyError::InvalidHeader), which is never skipped, not with `Other`.
    pub fn is_absent(&self) -> bool {
        matches!(self, KeyError::MissingHeader(_) | KeyError::Other(_))
    }
}

/// What the layer does with a request that a policy finds no key for, chosen per policy
/// ([`Keyed::missing_key`](super::Keyed::missing_key)) or for the layer's policies that did
/// not choose ([`RateLimitBuilder::missing_key`](super::RateLimitBuilder::missing_key)).
///
/// Whatever the choice, a request without a peer address ([`KeyError::NoPeerAddress`]: the
/// server does not record it) is answered 500, logged with the fix once at error level (to
/// standard error where no `tracing` subscriber listens; in the body too, in a debug build):
/// it is a fault of the configuration, and every request has it. A gRPC call gets the gRPC status of
/// the HTTP one (400 is `INVALID_ARGUMENT`, 401 `UNAUTHENTICATED`, 500 `INTERNAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MissingKey {
    /// Answer 500 Internal Server Error and log the reason at error level.
    InternalError,
    /// Answer with this status, logged at debug level: the default is 400 Bad Request (the
    /// client sent no key, or one that cannot be read); 401 suits a missing API key. Counted
    /// in `no_key` of [`LayerStats`](super::LayerStats), not in `denied`.
    Deny(http::StatusCode),
    /// Let the request through without charging that policy (the others still apply);
    /// logged at debug level. Only when the key is really absent ([`KeyError::is_absent`]):
    /// a key that is there but cannot be read, such as a hop a trusted proxy wrote as
    /// `for=unknown`, is answered 400. It counts as `allowed` in
    /// [`LayerStats`](super::LayerStats) (`no_key` counts only the requests the layer
    /// answered for want of a key).
    Skip,
}

impl Default for MissingKey {
    /// 400 Bad Request: a client error, logged at debug level (a flood of keyless requests
    /// neither fills the logs nor looks like a server fault).
    fn default() -> Self {
        MissingKey::Deny(http::StatusCode::BAD_REQUEST)
    }
}

impl MissingKey {
    /// What a policy with this choice does with `error`: `Ok` skips the policy, `Err` leaves
    /// the request without a key.
    pub(crate) fn apply(self, policy: &str, error: KeyError) -> Result<(), KeyError> {
        if self == MissingKey::Skip && error.is_absent() {
            tracing::debug!(policy, "rate limit skipped: {error}");
            return Ok(());
        }
        Err(error)
    }
}

/// One key for every request (the key is `()`): a global limit where a keyed policy is
/// expected, such as a [`RedisPolicy`](super::RedisPolicy) shared by all clients.
#[derive(Clone, Copy, Debug, Default)]
pub struct SameKey;

impl KeyExtractor for SameKey {
    type Key = ();

    fn extract(&self, _req: &RequestHead<'_>) -> Result<(), KeyError> {
        Ok(())
    }
}

/// The value of a request header, such as an API key in `x-api-key`. A request without it has
/// no key ([`MissingKey`] decides). The key is the header's bytes, exactly.
#[derive(Clone, Debug)]
pub struct HeaderKey {
    name: HeaderName,
}

impl HeaderKey {
    /// The value of the header `name`.
    pub fn new(name: HeaderName) -> HeaderKey {
        HeaderKey { name }
    }
}

impl KeyExtractor for HeaderKey {
    type Key = HeaderValue;

    fn extract(&self, req: &RequestHead<'_>) -> Result<HeaderValue, KeyError> {
        req.headers
            .get(&self.name)
            .cloned()
            .ok_or_else(|| KeyError::MissingHeader(self.name.clone()))
    }
}

/// A key from a closure: see [`from_fn`].
#[derive(Clone)]
pub struct FnKey<F> {
    f: F,
}

/// A key extractor from a closure, for keys the built-in ones do not cover (a user id that an
/// authentication layer put in the extensions, a tenant from the path).
///
/// ```
/// use cellrate_http::{from_fn, KeyError, RequestHead};
///
/// let tenant = from_fn(|req: &RequestHead<'_>| {
///     req.uri
///         .path()
///         .split('/')
///         .nth(1)
///         .map(str::to_owned)
///         .ok_or(KeyError::Other("no tenant in the path".into()))
/// });
/// # let _ = tenant;
/// ```
pub fn from_fn<F, K>(f: F) -> FnKey<F>
where
    F: Fn(&RequestHead<'_>) -> Result<K, KeyError> + Send + Sync + 'static,
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    FnKey { f }
}

impl<F, K> KeyExtractor for FnKey<F>
where
    F: Fn(&RequestHead<'_>) -> Result<K, KeyError> + Send + Sync + 'static,
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    type Key = K;

    fn extract(&self, req: &RequestHead<'_>) -> Result<K, KeyError> {
        (self.f)(req)
    }
}
