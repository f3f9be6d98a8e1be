//! Client addresses behind trusted proxies, over a real loopback server and client: the header
//! forms proxies write and the key each gives (or the refusal), X-Real-IP's lines, a header per
//! set of trusted networks, networks written as IPv4-mapped IPv6.
#![cfg(feature = "axum")]

use crate::http_support;

use axum::{routing::get, Router};
use cellrate::{KeyedLimiter, ManualClock, Quota};
use cellrate_http::{
    from_fn, ClientIp, KeyError, KeyExtractor, Keyed, ProxyHeader, RateLimitLayer,
};
use http::StatusCode;
use http_support::{serve, HttpClient};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

type Seen = Arc<Mutex<Vec<Result<IpAddr, KeyError>>>>;

/// A server whose per-IP policy (burst `burst`, one a minute) keys by `ip`, and what `ip`
/// found for each request.
async fn server(ip: ClientIp, burst: u32) -> (HttpClient, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let recording = from_fn(move |req| {
        let key = ip.extract(req);
        log.lock().unwrap().push(key.clone());
        key
    });
    let ips = Arc::new(KeyedLimiter::<IpAddr, _>::with_clock(
        Quota::per_minute(1).with_burst(burst),
        ManualClock::new(),
    ));
    let layer = RateLimitLayer::new(Keyed::new("ip", ips, recording));
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    (HttpClient::new(serve(app, true).await), seen)
}

fn net<T: std::str::FromStr>(text: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    text.parse().unwrap()
}

fn loopback(header: ProxyHeader) -> ClientIp {
    ClientIp::new().trust_proxies([net("127.0.0.0/8")], header)
}

#[tokio::test]
async fn proxy_written_forms_give_these_keys_or_a_refusal() {
    use ProxyHeader::{Forwarded, XForwardedFor, XRealIp};
    // (header the proxy writes, the request's lines of it, the key; None: refused 400).
    let table: &[(ProxyHeader, &[&str], Option<&str>)] = &[
        (XForwardedFor, &["192.0.2.1"], Some("192.0.2.1")),
        (XForwardedFor, &["6.6.6.6, 192.0.2.2"], Some("192.0.2.2")),
        (
            XForwardedFor,
            &["6.6.6.6", "192.0.2.3:8080"],
            Some("192.0.2.3"),
        ),
        (XForwardedFor, &["[2001:db8::1]:443"], Some("2001:db8::")),
        (XForwardedFor, &["::ffff:192.0.2.4"], Some("192.0.2.4")),
        (XForwardedFor, &["192.0.2.5, 127.0.0.1"], Some("192.0.2.5")),
        (XForwardedFor, &["1.2.3.4,,"], None),
        (XForwardedFor, &["010.1.1.1"], None),
        (XForwardedFor, &["fe80::1%eth0"], None),
        (XForwardedFor, &["192.0.2.6, junk"], None),
        (
            Forwarded,
            &[r#"for=192.0.2.7;proto=https"#],
            Some("192.0.2.7"),
        ),
        (
            Forwarded,
            &[r#"For="[2001:db8:cafe::17]:4711""#],
            Some("2001:db8:cafe::"),
        ),
        (Forwarded, &["for=unknown"], None),
        (Forwarded, &["for=_hidden"], None),
        (Forwarded, &["proto=https"], None),
        (XRealIp, &["192.0.2.8"], Some("192.0.2.8")),
        (XRealIp, &["6.6.6.6", "192.0.2.9"], Some("192.0.2.9")),
        (XRealIp, &["192.0.2.10, 6.6.6.6"], None),
        (XRealIp, &["garbage"], None),
    ];
    for &(header, lines, want) in table {
        let (client, seen) = server(loopback(header), 10).await;
        let name = match header {
            XForwardedFor => "x-forwarded-for",
            Forwarded => "forwarded",
            _ => "x-real-ip",
        };
        let headers: Vec<(&str, &str)> = lines.iter().map(|l| (name, *l)).collect();
        let answer = client.get("/", &headers).await;
        let got = seen.lock().unwrap().pop().unwrap();
        match want {
            Some(key) => {
                assert_eq!(answer.status, StatusCode::OK, "{name}: {lines:?}");
                assert_eq!(got, Ok(key.parse().unwrap()), "{name}: {lines:?}");
            }
            None => {
                assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{name}: {lines:?}");
                assert!(matches!(got, Err(KeyError::InvalidHeader(_))), "{got:?}");
            }
        }
    }
}

#[tokio::test]
async fn x_real_ip_is_the_proxys_last_line_not_the_clients_first() {
    // The client rotates the line it sends; the proxy appends the client's real address.
    let (client, _) = server(loopback(ProxyHeader::XRealIp), 1).await;
    let mut admitted = 0;
    for i in 0..10 {
        let spoof = format!("198.51.100.{i}");
        let answer = client
            .get("/", &[("x-real-ip", &spoof), ("x-real-ip", "192.0.2.1")])
            .await;
        admitted += usize::from(answer.status == StatusCode::OK);
    }
    assert_eq!(admitted, 1, "one client, burst 1");
}

#[tokio::test]
async fn each_set_of_trusted_networks_keeps_its_own_header() {
    // The loopback proxy writes Forwarded; a later call trusts other networks for
    // X-Forwarded-For, which the loopback peer passes on from the client unread.
    let ip = loopback(ProxyHeader::Forwarded)
        .trust_proxies([net("172.16.0.0/12")], ProxyHeader::XForwardedFor);
    let (client, seen) = server(ip, 1).await;
    let mut admitted = 0;
    for i in 0..5 {
        let spoof = format!("198.51.100.{i}");
        let headers = [("forwarded", "for=192.0.2.1"), ("x-forwarded-for", &spoof)];
        admitted += usize::from(client.get("/", &headers).await.status == StatusCode::OK);
    }
    assert_eq!(admitted, 1, "one client, burst 1");
    assert_eq!(seen.lock().unwrap()[0], Ok("192.0.2.1".parse().unwrap()));
}

#[tokio::test]
async fn a_network_written_as_ipv4_mapped_ipv6_trusts_ipv4_peers() {
    let ip =
        ClientIp::new().trust_proxies([net("::ffff:127.0.0.0/104")], ProxyHeader::XForwardedFor);
    let (client, seen) = server(ip, 1).await;
    for client_ip in ["192.0.2.1", "192.0.2.2"] {
        let answer = client.get_as("/", client_ip).await;
        assert_eq!(answer.status, StatusCode::OK, "a bucket per client");
    }
    let keys = seen.lock().unwrap().clone();
    assert_eq!(keys[1], Ok("192.0.2.2".parse().unwrap()));
}

#[test]
fn key_of_masks_like_the_extractor() {
    let ip = ClientIp::new().ipv6_prefix(64);
    let key = |s: &str| ip.key_of(s.parse().unwrap());
    assert_eq!(
        key("2001:db8:1:2:3:4:5:6"),
        "2001:db8:1:2::".parse::<IpAddr>().unwrap()
    );
    assert_eq!(
        key("::ffff:192.0.2.1"),
        "192.0.2.1".parse::<IpAddr>().unwrap()
    );
}
