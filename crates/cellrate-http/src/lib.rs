//! Rate limiting for HTTP and gRPC servers: a tower layer for axum, hyper and
//! tonic, with the client address as a key (behind trusted proxies), 429s with `Retry-After`,
//! and the `RateLimit-Policy` / `RateLimit` header fields.
//!
//! ```no_run
//! use axum::{routing::get, Router};
//! use cellrate_http::{ClientIp, Global, Keyed, RateLimitLayer};
//! use cellrate::{KeyedLimiter, Limiter, Quota};
//! use std::net::{IpAddr, SocketAddr};
//! use std::sync::Arc;
//!
//! # async fn serve() -> std::io::Result<()> {
//! // 5 requests per second per client (a burst of 10), 1,000 per second in all.
//! let per_ip = Arc::new(KeyedLimiter::<IpAddr>::new(Quota::per_second(5).with_burst(10)));
//! let global = Arc::new(Limiter::new(Quota::per_second(1_000)));
//! let limit = RateLimitLayer::new(
//!     Keyed::new("per-ip", per_ip, ClientIp::new()).and(Global::new("global", global)),
//! );
//! let app = Router::new().route("/", get(|| async { "hello" })).layer(limit);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! // The client address reaches the layer through ConnectInfo (this crate's feature `axum`).
//! axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await
//! # }
//! ```
//!
//! | Job | Type |
//! |---|---|
//! | The layer and its options | [`RateLimitLayer`] (`new`, `builder`) and [`RateLimitBuilder`]; the service [`RateLimit`] |
//! | One limit for all | [`Global`] |
//! | A limit per key | [`Keyed`] with a [`KeyExtractor`]: [`ClientIp`] (with [`ProxyHeader`]), [`HeaderKey`], [`SameKey`], [`from_fn`] |
//! | A quota per request (tiers) | [`Tiered`] |
//! | Buckets in Redis (feature `redis`) | `RedisPolicy`, `RedisPolicies`, `RedisKey` |
//! | Several policies at once | `a.and(b)`: [`Both`] |
//! | A request without a key | [`MissingKey`], [`KeyError`] |
//! | Your own answer to a denied request | [`Denial`] ([`RateLimitBuilder::on_denied`]) |
//! | Counts of the layer's answers | [`LayerStats`] ([`RateLimitLayer::stats`]) |
//! | Bodies | [`SameBody`], [`WrappedBody`], [`RateLimitBody`] |
//!
//! # The layer
//! [`RateLimitLayer`] makes a [`RateLimit`] service. `poll_ready` is the inner service's and
//! the decision is made in `call`, since it needs the request; a refusal is a response, not a
//! service error. Clones share the limiters, so axum's cloning per route and connection never
//! multiplies a limit, and no `Buffer` is needed. With in-process limiters the decision is
//! made in `call` itself, with no allocation and no boxing; a Redis decision is a boxed
//! future (it is a round trip anyway). `Router::layer` limits every route, `route_layer` only
//! matched ones; tonic takes it in `Server::builder().layer(..)`; for hyper, wrap the service
//! with `Layer::layer`.
//!
//! Responses keep the inner service's body type ([`SameBody`]), and the layer writes its own
//! answers in it: any body that is `From<Bytes>`, such as axum's `Body` or http-body-util's
//! `Full<Bytes>`. A body type that is not (tonic's, a boxed body) needs
//! [`RateLimitBuilder::wrap_body`], which makes every body a [`RateLimitBody`] around it:
//!
//! ```no_run
//! # use cellrate_http::{Global, RateLimitLayer};
//! # use cellrate::{Limiter, Quota};
//! # use std::sync::Arc;
//! # let global = Arc::new(Limiter::new(Quota::per_second(100)));
//! let for_tonic = RateLimitLayer::builder(Global::new("grpc", global))
//!     .wrap_body()
//!     .build();
//! // tonic::transport::Server::builder().layer(for_tonic).add_service(..)
//! # let _ = for_tonic;
//! ```
//!
//! (With axum the wrapper would only cost time: axum boxes every response body that is not
//! its own `Body`, an allocation per request.)
//!
//! # Policies
//! - [`Global`]: one shared [`Limiter`](cellrate::Limiter).
//! - [`Keyed`]: a [`KeyedLimiter`](cellrate::KeyedLimiter) and a [`KeyExtractor`]: [`ClientIp`],
//!   [`HeaderKey`] (an API key), [`SameKey`] (one key for all), or your own with [`from_fn`].
//!   A background thread evicts idle keys every 60 s ([`Keyed::evict_idle_every`]), one per
//!   limiter however many layers share it.
//! - `a.and(b)` (a method of every policy): several policies at once, all or nothing, with
//!   [`all_of`](cellrate::all_of); up to 4. They must share one clock type.
//! - [`Tiered`] ([`Keyed::quota_per_request`]): a quota chosen per request (free, paid). A
//!   key has a bucket of its own under each tier, exact under that tier's quota: a key that
//!   changes tier starts the new one as a new key does, and its old bucket keeps what it spent.
//!   Pick the tier from what the client cannot change per request (its API key's plan), or it
//!   could spend each tier's bucket in turn.
//! - With the `redis` feature, [`RedisPolicy`]: buckets in Redis shared by every server, several
//!   at once with the all-or-nothing script.
//!
//! A request costs 1 token, or what [`RateLimitBuilder::cost`] says (by route, by
//! `Content-Length` with [`content_length_cost`], which rounds up, stops at the burst and
//! charges the most for a body of unstated length). A request a policy finds no key for gets a 400 logged at debug level, or what
//! that policy's [`MissingKey`] says ([`Keyed::missing_key`]); it never falls into one shared
//! bucket. Skipping applies only to a key that is really absent ([`KeyError::is_absent`]).
//!
//! A fault of the deployment is the server's, not the request's: a request without a peer
//! address (the server does not record it), or a Redis store that refuses the limiter (a user
//! without a command the scripts need, keys of two Cluster slots in one check, a key holding
//! other data) gets a 500 (gRPC `INTERNAL`) under every failure policy, counted in
//! [`LayerStats::faults`] (or `no_key`), and is logged with the fix once per layer at error
//! level: to standard error where no `tracing` subscriber listens, and, in a debug build, in
//! the 500's body too.
//!
//! # Client addresses
//! [`ClientIp`] keys by the peer address (axum's `ConnectInfo<SocketAddr>` with the `axum`
//! feature, tonic's `TcpConnectInfo` with the `tonic` feature, or a `SocketAddr` request
//! extension; [`ClientIp::key_of`] masks an address found elsewhere); IPv6 by its /56 prefix (one client usually
//! owns a whole prefix), IPv4 by address. Behind proxies, list them with
//! [`ClientIp::trust_proxies`], each set of networks with the header its proxies
//! write: only a trusted peer's header is read, from the right, and a hop that is itself a
//! trusted proxy continues the walk in the header that proxy writes (a CDN writing `Forwarded`
//! behind a load balancer writing `X-Forwarded-For` is read through both), so the entries a
//! client wrote itself never choose its bucket.
//!
//! # Responses and headers
//! A refusal is a 429 with `Retry-After` in whole seconds rounded up (a client that waits that
//! long is admitted), a plain-text or [`problem_json`](RateLimitBuilder::problem_json) body
//! (type [`QUOTA_EXCEEDED`]), or your own ([`RateLimitBuilder::on_denied`]). A request whose
//! cost exceeds a burst can never pass: 429 without `Retry-After`. A gRPC or gRPC-Web call
//! (`content-type: application/grpc...`, in any case) gets a trailers-only answer in its own
//! content-type family: `grpc-status: 8` (`RESOURCE_EXHAUSTED`), a message, and
//! `grpc-retry-pushback-ms` (milliseconds rounded up; -1, "do not retry", for a cost above
//! the burst). A call without a key gets the gRPC status of the HTTP one (3
//! `INVALID_ARGUMENT` for 400, 16 `UNAUTHENTICATED` for 401, 13 `INTERNAL` for 500). A
//! refusal written by [`RateLimitBuilder::on_denied`] is sent as written.
//!
//! Admitted and refused responses carry, one item per policy
//! (draft-ietf-httpapi-ratelimit-headers-10, RFC 9651 lists):
//!
//! ```text
//! RateLimit-Policy: "per-ip";q=10;w=2, "global";q=1000;w=1
//! RateLimit: "per-ip";r=7;t=1, "global";r=996;t=1
//! ```
//!
//! A GCRA quota (a token every `T`, a burst `b`) has no fixed window, so it is stated as the
//! window a client can rely on: `q` = `b` and `w` = `b * T` (the time an empty bucket takes to
//! fill) in whole seconds, rounded up, and `q / w` never exceeds the real rate. On an exact
//! clock, spending `q` per `w` seconds is never refused. On a reading that may lag (the
//! default [`TickClock`](cellrate::TickClock) for quotas at least 16 ms deep) a window's first
//! request can be judged on a reading that lags more than the one before, so a client should
//! also leave the clock's declared lag ([`Clock::lag_within`](cellrate::Clock::lag_within),
//! 2 ms on `TickClock`) between windows. `r` is the whole tokens left and `t` the seconds
//! until the bucket holds more (rounded up; 0 when full), so `Retry-After` is never earlier
//! than the `t` of a policy that refused. `pk` ([`RateLimitBuilder::partition_key`]) is a keyed hash of
//! the key under a secret of the layer, never the key. Redis policies decided together report
//! each policy's own figures, as in-process ones do; while Redis gives no decision, the local
//! fallback's answers show its own bucket's, and `FailOpen`'s and `FailClosed`'s none (they
//! read no bucket). The legacy
//! `X-RateLimit-Limit/Remaining/Reset` are an option.
//!
//! # After the response
//! [`RateLimitBuilder::refund_if`] gives the tokens back when the response matches (count only
//! failed logins). Do not refund 5xx: an attacker can cause them, and requests would be free
//! exactly under overload; the method's docs show safe predicates. A request admitted but
//! never answered (its future dropped when the client hangs up, or an inner service error)
//! keeps its charge unless [`RateLimitBuilder::refund_on_drop`]. [`RateLimitBuilder::shadow`]
//! decides and reports without refusing, to roll a limit out; [`RateLimitLayer::stats`]
//! counts what it would have refused.

#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod answers;
mod backend;
mod body;
mod client_ip;
mod cost;
mod denial;
mod fault;
mod forwarded;
mod future;
mod grpc;
mod headers;
mod interned;
mod key;
mod layer;
mod local;
mod policy;
#[cfg(feature = "redis")]
mod remote;
mod service;
mod shared;
mod slots;
mod state;
mod stats;
mod tiered;
mod upkeep;

pub use answers::QUOTA_EXCEEDED;
pub use backend::Backend;
pub use body::{BodyKind, RateLimitBody, SameBody, WrappedBody};
pub use client_ip::ClientIp;
pub use cost::content_length_cost;
pub use denial::Denial;
pub use forwarded::ProxyHeader;
pub use future::ResponseFuture;
pub use key::{
    from_fn, FnKey, HeaderKey, KeyError, KeyExtractor, MissingKey, RequestHead, SameKey,
};
pub use layer::{RateLimitBuilder, RateLimitLayer, RefundUnsupported};
pub use policy::{Both, Global, Keyed};
#[cfg(feature = "redis")]
pub use remote::{RedisKey, RedisPolicies, RedisPolicy};
pub use service::RateLimit;
pub use stats::LayerStats;
pub use tiered::Tiered;

/// The README's example, compiled as a doc test so that it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}
