//! The layer in front of a real tonic server on loopback, called by a real tonic client: a
//! refusal is `RESOURCE_EXHAUSTED` with the retry time in `grpc-retry-pushback-ms`, a call
//! without a key gets a gRPC status, and `ClientIp` reads tonic's peer address.

use cellrate::{Limiter, ManualClock, Quota};
use cellrate_http::{Global, RateLimitLayer};
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Server};
use tonic::Code;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

#[tokio::test]
async fn a_refused_call_is_resource_exhausted_with_the_pushback() {
    // 2 calls at once, then one every 250 ms (+ 1 ns: the pushback rounds up to 251 ms).
    let quota = Quota::try_new(Duration::from_nanos(250_000_001), 2).unwrap();
    let clock = ManualClock::new();
    let global = Arc::new(Limiter::with_clock(quota, clock.clone()));
    // tonic's body cannot be built from bytes: the layer wraps it to answer in it.
    let layer = RateLimitLayer::builder(Global::new("grpc", global))
        .wrap_body()
        .build();

    let (_reporter, health) = tonic_health::server::health_reporter();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        Server::builder()
            .layer(layer)
            .add_service(health)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );

    let mut client = tokio::time::timeout(
        Duration::from_secs(10),
        Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect(),
    )
    .await
    .expect("connected within 10 s")
    .map(HealthClient::new)
    .unwrap();
    let call = || HealthCheckRequest {
        service: String::new(),
    };
    for _ in 0..2 {
        let answer = client.check(call()).await.expect("admitted");
        assert!(answer.metadata().get("ratelimit").is_some());
    }
    let refused = client.check(call()).await.expect_err("refused");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused.message().contains("251 ms"),
        "{}",
        refused.message()
    );
    let pushback = refused.metadata().get("grpc-retry-pushback-ms").unwrap();
    assert_eq!(pushback.to_str().unwrap(), "251");

    clock.advance(Duration::from_millis(251));
    assert!(
        client.check(call()).await.is_ok(),
        "admitted after the pushback"
    );
}

/// A tonic health server behind `layer` on loopback, and a tonic client of it.
async fn health_behind<B: cellrate_http::Backend>(
    layer: RateLimitLayer<B, cellrate_http::WrappedBody>,
) -> HealthClient<Channel> {
    let (_reporter, health) = tonic_health::server::health_reporter();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        Server::builder()
            .layer(layer)
            .add_service(health)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    tokio::time::timeout(
        Duration::from_secs(10),
        Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect(),
    )
    .await
    .expect("connected within 10 s")
    .map(HealthClient::new)
    .unwrap()
}

fn check() -> HealthCheckRequest {
    HealthCheckRequest {
        service: String::new(),
    }
}

#[cfg(feature = "tonic")]
#[tokio::test]
async fn client_ip_reads_tonics_peer_address() {
    use cellrate::KeyedLimiter;
    use cellrate_http::{ClientIp, Keyed};
    let ips = Arc::new(
        KeyedLimiter::<std::net::IpAddr, _>::builder(Quota::per_minute(1).with_burst(1))
            .clock(ManualClock::new())
            .build(),
    );
    let layer = RateLimitLayer::builder(Keyed::new("ip", ips.clone(), ClientIp::new()))
        .wrap_body()
        .build();
    let mut client = health_behind(layer).await;
    client.check(check()).await.expect("admitted");
    let refused = client.check(check()).await.expect_err("refused");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert_eq!(ips.len(), 1, "one key: the loopback peer");
}

#[tokio::test]
async fn a_call_without_a_key_gets_a_grpc_status() {
    use cellrate::KeyedLimiter;
    use cellrate_http::{HeaderKey, Keyed, MissingKey};
    use http::{HeaderName, HeaderValue};
    let keys = || {
        Arc::new(
            KeyedLimiter::<HeaderValue, _>::builder(Quota::per_minute(1))
                .clock(ManualClock::new())
                .build(),
        )
    };
    let api_key = || HeaderKey::new(HeaderName::from_static("x-api-key"));
    // The default (400) is INVALID_ARGUMENT; a chosen 401 is UNAUTHENTICATED.
    let cases = [
        (Keyed::new("k", keys(), api_key()), Code::InvalidArgument),
        (
            Keyed::new("k", keys(), api_key())
                .missing_key(MissingKey::Deny(http::StatusCode::UNAUTHORIZED)),
            Code::Unauthenticated,
        ),
        (
            Keyed::new("k", keys(), api_key()).missing_key(MissingKey::InternalError),
            Code::Internal,
        ),
    ];
    for (policy, code) in cases {
        let layer = RateLimitLayer::builder(policy).wrap_body().build();
        let mut client = health_behind(layer).await;
        let refused = client.check(check()).await.expect_err("no key");
        assert_eq!(refused.code(), code, "{refused:?}");
        assert!(
            refused.message().contains("no rate limit key"),
            "{refused:?}"
        );
    }
}

#[tokio::test]
async fn refusals_keep_the_calls_content_type_family_in_any_case() {
    let global = Arc::new(Limiter::with_clock(
        Quota::per_minute(1).with_burst(1),
        ManualClock::new(),
    ));
    // A cost above the burst: every call is refused.
    let layer = RateLimitLayer::builder(Global::new("grpc", global))
        .cost(|_| 2)
        .wrap_body()
        .build();
    let (_reporter, health) = tonic_health::server::health_reporter();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        Server::builder()
            .layer(layer)
            .add_service(health)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    // tonic's channel sends the content type given, as a gRPC-Web proxy or another stack would.
    let mut channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    for (sent, answered) in [
        ("Application/GRPC", "application/grpc"),
        ("application/grpc+proto", "application/grpc"),
        ("application/grpc-web+proto", "application/grpc-web"),
        ("Application/gRPC-Web-Text", "application/grpc-web-text"),
    ] {
        let req = http::Request::post(format!("http://{addr}/grpc.health.v1.Health/Check"))
            .header("content-type", sent)
            .header("te", "trailers")
            .body(tonic::body::Body::default())
            .unwrap();
        std::future::poll_fn(|cx| tower_service::Service::poll_ready(&mut channel, cx))
            .await
            .unwrap();
        let response = tower_service::Service::call(&mut channel, req)
            .await
            .unwrap();
        let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap());
        assert_eq!(
            response.status(),
            http::StatusCode::OK,
            "{sent}: trailers-only"
        );
        assert_eq!(header("content-type"), Some(answered), "{sent}");
        assert_eq!(header("grpc-status"), Some("8"), "{sent}");
        assert_eq!(header("grpc-retry-pushback-ms"), Some("-1"), "{sent}");
    }
}
