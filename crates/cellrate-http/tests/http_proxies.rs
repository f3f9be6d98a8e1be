//! Client addresses behind trusted proxies, over a real loopback server and client: the header
//! forms proxies write and the key each gives (or the refusal), X-Real-IP's lines, a header per
//! set of trusted networks, fleets of proxies writing different headers, networks written as
//! IPv4-mapped IPv6.
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
    let ips = Arc::new(
        KeyedLimiter::<IpAddr, _>::builder(Quota::per_minute(1).with_burst(burst))
            .clock(ManualClock::new())
            .build(),
    );
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

/// How a proxy records the address it received a request from in `header`: appended to the
/// last `X-Forwarded-For` line or `Forwarded` element list; for `X-Real-IP`, a line of its own
/// appended (`append`) or the header set to that one line.
fn record(headers: &mut Vec<(&'static str, String)>, header: ProxyHeader, hop: &str, append: bool) {
    let (name, entry) = match header {
        ProxyHeader::XForwardedFor => ("x-forwarded-for", hop.to_owned()),
        ProxyHeader::Forwarded => ("forwarded", format!("for={hop}")),
        _ => ("x-real-ip", hop.to_owned()),
    };
    if name == "x-real-ip" {
        if !append {
            headers.retain(|(n, _)| *n != name);
        }
        headers.push((name, entry));
        return;
    }
    match headers.iter_mut().rev().find(|(n, _)| *n == name) {
        Some((_, line)) => *line = format!("{line}, {entry}"),
        None => headers.push((name, entry)),
    }
}

/// What client `i` sends: a forged entry in every header, and after it `hop`, a forged hop
/// of the CDN's network.
fn forged(i: usize, hop: &str) -> Vec<(&'static str, String)> {
    let forged = format!("198.51.100.{i}");
    vec![
        ("x-forwarded-for", format!("{forged}, {hop}")),
        ("forwarded", format!("for={forged}, for={hop}")),
        ("x-real-ip", forged),
        ("x-real-ip", hop.to_owned()),
    ]
}

/// A server behind a CDN (10.0.0.0/8) trusted for `cdn` and a load balancer (the loopback peer)
/// trusted for `lb`, burst 1.
async fn behind_fleet(cdn: ProxyHeader, lb: ProxyHeader) -> (HttpClient, Seen) {
    let ip = ClientIp::new()
        .trust_proxies([net("10.0.0.0/8")], cdn)
        .trust_proxies([net("127.0.0.0/8")], lb);
    server(ip, 1).await
}

/// `headers` sent by `client`: the status, and the key the server found.
async fn keyed(
    client: &HttpClient,
    seen: &Seen,
    headers: &[(&'static str, String)],
) -> (StatusCode, Result<IpAddr, KeyError>) {
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let status = client.get("/", &headers).await.status;
    (status, seen.lock().unwrap().pop().unwrap())
}

/// A fleet of two kinds of proxy: a CDN in front of a load balancer, each trusted for the
/// header it writes, every pairing of the two. The client forges every header, hops of the
/// CDN's network included; the CDN records the client's address, the load balancer the CDN's.
/// Each request must be keyed by the client's real address, whatever it forged: a hop trusted
/// for another header switches the walk to that header, never reads on in the one it only
/// passed on. Where the CDN's hop names no address the request is refused; where the load
/// balancer sets X-Real-IP over the CDN's line, the CDN is all that is left to key by.
#[tokio::test]
async fn mixed_fleets_key_each_request_by_the_client_whatever_it_forged() {
    use ProxyHeader::{Forwarded, XForwardedFor, XRealIp};
    const CLIENT: &str = "203.0.113.7";
    const CDN: &str = "10.0.0.5";
    // What a request the fleet passed on is keyed by: (CDN's header, LB's header, X-Real-IP
    // lines appended rather than set, what the CDN records, the key; None: refused).
    let mut table: Vec<(ProxyHeader, ProxyHeader, bool, &str, Option<&str>)> = Vec::new();
    for cdn in [XForwardedFor, Forwarded, XRealIp] {
        for lb in [XForwardedFor, Forwarded, XRealIp] {
            for append in [true, false] {
                if !append && cdn != XRealIp && lb != XRealIp {
                    continue; // the same requests as appending
                }
                let overwritten = cdn == XRealIp && lb == XRealIp && !append;
                let key = if overwritten { CDN } else { CLIENT };
                table.push((cdn, lb, append, CLIENT, Some(key)));
                if !overwritten {
                    table.push((cdn, lb, append, "unknown", None));
                }
            }
        }
    }
    for (cdn, lb, append, recorded, want) in table {
        let (client, seen) = behind_fleet(cdn, lb).await;
        let mut admitted = 0;
        for i in 0..5 {
            let mut headers = forged(i, "10.0.0.9");
            record(&mut headers, cdn, recorded, append);
            record(&mut headers, lb, CDN, append);
            let (status, got) = keyed(&client, &seen, &headers).await;
            let case = format!("CDN {cdn:?}, LB {lb:?}, append {append}: {headers:?}");
            match want {
                Some(key) => assert_eq!(got, Ok(key.parse().unwrap()), "{case}"),
                None => {
                    assert_eq!(status, StatusCode::BAD_REQUEST, "{case}");
                    let unreadable = matches!(got, Err(KeyError::InvalidHeader(_)));
                    assert!(unreadable, "{case}: {got:?}");
                }
            }
            admitted += usize::from(status == StatusCode::OK);
        }
        let case = format!("CDN {cdn:?}, LB {lb:?}, append {append}");
        assert_eq!(admitted, usize::from(want.is_some()), "{case}");
    }
}

/// A client that reaches the load balancer itself, past the CDN, forges the CDN's hop in every
/// header: the load balancer records the client's own address, which is all that is read.
#[tokio::test]
async fn a_client_past_the_cdn_cannot_forge_its_hop() {
    use ProxyHeader::{Forwarded, XForwardedFor, XRealIp};
    const ATTACKER: &str = "192.0.2.66";
    for cdn in [XForwardedFor, Forwarded, XRealIp] {
        for lb in [XForwardedFor, Forwarded, XRealIp] {
            let (client, seen) = behind_fleet(cdn, lb).await;
            let mut admitted = 0;
            for i in 0..5 {
                let mut headers = forged(i, "10.0.0.5");
                record(&mut headers, lb, ATTACKER, true);
                let (status, got) = keyed(&client, &seen, &headers).await;
                assert_eq!(got, Ok(ATTACKER.parse().unwrap()), "CDN {cdn:?}, LB {lb:?}");
                admitted += usize::from(status == StatusCode::OK);
            }
            assert_eq!(admitted, 1, "CDN {cdn:?}, LB {lb:?}: one client, burst 1");
        }
    }
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
