//! The layer in front of a real axum server on loopback, driven by a real HTTP client, on a
//! manual clock.
#![cfg(feature = "axum")]

use crate::http_support;

use axum::{routing::get, Router};
use cellrate::{KeyedLimiter, Limiter, ManualClock, Quota};
use cellrate_http::{ClientIp, Global, Keyed, ProxyHeader, RateLimitLayer};
use http::StatusCode;
use http_support::logs::{runtime, Logs};
use http_support::{parse_list, ratelimit, serve, HttpClient};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tracing::Level;

type Ips = Arc<KeyedLimiter<IpAddr, ManualClock>>;

fn per_ip(quota: Quota, clock: &ManualClock) -> Ips {
    Arc::new(
        KeyedLimiter::builder(quota)
            .max_keys(1_000)
            .clock(clock.clone())
            .build(),
    )
}

fn app(layer: RateLimitLayer<impl cellrate_http::Backend>) -> Router {
    Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer)
}

fn behind_loopback_proxy() -> ClientIp {
    ClientIp::new().trust_proxies(["127.0.0.0/8".parse().unwrap()], ProxyHeader::XForwardedFor)
}

#[tokio::test]
async fn per_ip_and_global_admit_exactly_their_bursts() {
    let clock = ManualClock::new();
    let ips = per_ip(Quota::per_minute(1).with_burst(3), &clock);
    let global = Arc::new(Limiter::with_clock(
        Quota::per_minute(1).with_burst(5),
        clock,
    ));
    let layer = RateLimitLayer::new(
        Keyed::new("per-ip", ips, behind_loopback_proxy())
            .and(Global::new("global", global.clone())),
    );
    let client = HttpClient::new(serve(app(layer.clone()), true).await);

    let mut admitted = Vec::new();
    for (client_ip, tries) in [("192.0.2.1", 4), ("192.0.2.2", 4)] {
        let mut n = 0;
        for _ in 0..tries {
            let answer = client.get_as("/", client_ip).await;
            if answer.status == StatusCode::OK {
                n += 1;
            } else {
                assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
            }
        }
        admitted.push(n);
    }
    // The first client is held to its 3; the second gets the global limit's last 2.
    assert_eq!(admitted, [3, 2]);
    assert_eq!(global.available(), 0);
    let stats = layer.stats();
    assert_eq!((stats.allowed, stats.denied), (5, 3));
}

#[tokio::test]
async fn retry_after_is_rounded_up_and_waiting_it_is_enough() {
    let clock = ManualClock::new();
    // A token every 1.5 s, burst 2: the third request must wait 1.5 s, announced as 2.
    let ips = per_ip(
        Quota::with_period(Duration::from_millis(1500)).with_burst(2),
        &clock,
    );
    let layer = RateLimitLayer::new(Keyed::new("per-ip", ips, ClientIp::new()));
    let client = HttpClient::new(serve(app(layer), true).await);

    for _ in 0..2 {
        assert_eq!(client.get("/", &[]).await.status, StatusCode::OK);
    }
    let refused = client.get("/", &[]).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.header("retry-after"), Some("2"));
    assert_eq!(ratelimit(&refused), [("per-ip".into(), 0, 2)]);
    // Truncating to 1 s would send the client back too early.
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        client.get("/", &[]).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    clock.advance(Duration::from_secs(1));
    assert_eq!(client.get("/", &[]).await.status, StatusCode::OK);
}

#[tokio::test]
async fn headers_are_structured_field_lists_with_the_right_numbers() {
    let clock = ManualClock::new();
    // per-ip: burst 4, a token every 500 ms (w = 2 s); global: burst 100, 10 ms (w = 1 s).
    let ips = per_ip(Quota::per_second(2).with_burst(4), &clock);
    let global = Arc::new(Limiter::with_clock(Quota::per_second(100), clock.clone()));
    let layer = RateLimitLayer::builder(
        Keyed::new("per-ip", ips, ClientIp::new()).and(Global::new("global", global)),
    )
    .legacy_headers(true)
    .partition_key(true)
    .build();
    let client = HttpClient::new(serve(app(layer), true).await);

    let first = client.get("/", &[]).await;
    let policy = parse_list(first.header("ratelimit-policy").unwrap());
    let q_w = |i: usize| (policy[i].0.clone(), policy[i].1[..2].to_vec());
    assert_eq!(
        q_w(0),
        ("per-ip".into(), vec![("q".into(), 4), ("w".into(), 2)])
    );
    assert_eq!(
        q_w(1),
        ("global".into(), vec![("q".into(), 100), ("w".into(), 1)])
    );
    assert_eq!(
        ratelimit(&first),
        [("per-ip".into(), 3, 1), ("global".into(), 99, 1)]
    );
    // pk is a byte sequence that is neither the address nor empty.
    let value = first.header("ratelimit").unwrap();
    assert!(
        value.contains(";pk=:") && !value.contains("127.0.0.1"),
        "{value}"
    );
    assert_eq!(first.header("x-ratelimit-limit"), Some("4"));
    assert_eq!(first.header("x-ratelimit-remaining"), Some("3"));
    assert_eq!(first.header("x-ratelimit-reset"), Some("1"));

    for _ in 0..3 {
        client.get("/", &[]).await;
    }
    let refused = client.get("/", &[]).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        ratelimit(&refused),
        [("per-ip".into(), 0, 1), ("global".into(), 96, 1)]
    );
    assert_eq!(refused.header("retry-after"), Some("1"));
    clock.advance(Duration::from_secs(2));
    let full = client.get("/", &[]).await;
    assert_eq!(
        ratelimit(&full),
        [("per-ip".into(), 3, 1), ("global".into(), 99, 1)]
    );
}

#[tokio::test]
async fn a_spoofed_forwarded_for_changes_nothing_unless_the_peer_is_trusted() {
    let clock = ManualClock::new();
    let quota = Quota::per_minute(1).with_burst(2);
    // Only 10.0.0.0/8 is trusted: the loopback peer's header is ignored.
    let untrusting =
        ClientIp::new().trust_proxies(["10.0.0.0/8".parse().unwrap()], ProxyHeader::XForwardedFor);
    let layer = RateLimitLayer::new(Keyed::new("ip", per_ip(quota, &clock), untrusting));
    let client = HttpClient::new(serve(app(layer), true).await);
    let statuses = [
        client.get_as("/", "198.51.100.1").await.status,
        client.get_as("/", "198.51.100.2").await.status,
        client.get_as("/", "198.51.100.3").await.status,
    ];
    assert_eq!(statuses[..2], [StatusCode::OK, StatusCode::OK]);
    assert_eq!(
        statuses[2],
        StatusCode::TOO_MANY_REQUESTS,
        "one bucket: the peer's"
    );

    // Behind a trusted proxy the rightmost untrusted hop is the client: what the client wrote
    // itself on the left does not choose its bucket.
    let layer = RateLimitLayer::new(Keyed::new(
        "ip",
        per_ip(quota, &clock),
        behind_loopback_proxy(),
    ));
    let client = HttpClient::new(serve(app(layer), true).await);
    for spoof in ["1.1.1.1", "2.2.2.2"] {
        let hops = format!("{spoof}, 203.0.113.9");
        assert_eq!(client.get_as("/", &hops).await.status, StatusCode::OK);
    }
    let again = client.get_as("/", "3.3.3.3, 203.0.113.9").await;
    assert_eq!(again.status, StatusCode::TOO_MANY_REQUESTS);
    // Another client has its own bucket; a trusted hop on the right is skipped.
    assert_eq!(
        client.get_as("/", "203.0.113.10").await.status,
        StatusCode::OK
    );
    assert_eq!(
        client.get_as("/", "203.0.113.10, 127.0.0.5").await.status,
        StatusCode::OK
    );
    let third = client.get_as("/", "203.0.113.10").await;
    assert_eq!(third.status, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn ipv6_addresses_in_one_56_share_a_bucket() {
    let clock = ManualClock::new();
    let quota = Quota::per_minute(1).with_burst(2);
    let layer = RateLimitLayer::new(Keyed::new(
        "ip",
        per_ip(quota, &clock),
        behind_loopback_proxy(),
    ));
    let client = HttpClient::new(serve(app(layer), true).await);
    let one_56 = [
        "2001:db8:0:100::1",
        "2001:db8:0:1ff:ffff::2",
        "2001:db8:0:1aa::3",
    ];
    let statuses: Vec<_> = futures_in_order(&client, &one_56).await;
    assert_eq!(
        statuses,
        [
            StatusCode::OK,
            StatusCode::OK,
            StatusCode::TOO_MANY_REQUESTS
        ]
    );
    assert_eq!(
        client.get_as("/", "2001:db8:0:200::1").await.status,
        StatusCode::OK
    );
    // An IPv4-mapped address is its IPv4 client.
    assert_eq!(client.get_as("/", "192.0.2.7").await.status, StatusCode::OK);
    assert_eq!(
        client.get_as("/", "::ffff:192.0.2.7").await.status,
        StatusCode::OK
    );
    let mapped = client.get_as("/", "[::ffff:192.0.2.7]:5000").await;
    assert_eq!(mapped.status, StatusCode::TOO_MANY_REQUESTS);
}

async fn futures_in_order(client: &HttpClient, ips: &[&str]) -> Vec<StatusCode> {
    let mut out = Vec::new();
    for ip in ips {
        out.push(client.get_as("/", ip).await.status);
    }
    out
}

#[tokio::test]
async fn no_connect_info_is_a_clear_500_not_a_shared_bucket() {
    let clock = ManualClock::new();
    let ips = per_ip(Quota::per_minute(1), &clock);
    let layer = RateLimitLayer::new(Keyed::new("ip", ips.clone(), ClientIp::new()));
    let client = HttpClient::new(serve(app(layer.clone()), false).await);
    let answer = client.get("/", &[]).await;
    assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(answer.body.contains("no rate limit key"), "{}", answer.body);
    // A developer trying the server without a tracing subscriber sees the fix in the body of
    // a debug build (and, once, on standard error).
    if cfg!(debug_assertions) {
        let fix = "into_make_service_with_connect_info::<SocketAddr>()";
        assert!(answer.body.contains(fix), "{}", answer.body);
    }
    assert_eq!(layer.stats().no_key, 1);
    assert!(ips.is_empty(), "nothing was charged");
}

/// Forgetting `ConnectInfo` is logged once at error level with the fix, not once per request.
#[test]
fn no_connect_info_is_logged_once_with_the_fix() {
    let logs = Logs::default();
    logs.capture(|| {
        runtime().block_on(async {
            let ips = per_ip(Quota::per_minute(1), &ManualClock::new());
            let layer = RateLimitLayer::new(Keyed::new("ip", ips, ClientIp::new()));
            let client = HttpClient::new(serve(app(layer), false).await);
            for _ in 0..3 {
                let answer = client.get("/", &[]).await;
                assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
            }
        })
    });
    let fix = "into_make_service_with_connect_info";
    assert_eq!(logs.lines(Level::ERROR, fix).len(), 1);
    assert_eq!(logs.lines(Level::DEBUG, "no client address").len(), 2);
}
