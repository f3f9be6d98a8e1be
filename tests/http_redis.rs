//! The layer with Redis policies, against a real `redis-server` the test starts, and a real
//! axum server and client on loopback.
#![cfg(all(feature = "http", feature = "axum", feature = "redis"))]

mod http_support;
mod redis_support;

use axum::{routing::get, Router};
use cellrate::http::{ClientIp, ProxyHeader, RateLimitLayer, RedisPolicy, SameKey};
use cellrate::redis::{RedisLimiter, RedisOptions};
use cellrate::Quota;
use http::StatusCode;
use http_support::{ratelimit, serve, HttpClient};
use redis_support::{runtime, RedisServer};

fn behind_loopback_proxy() -> ClientIp {
    ClientIp::new().trust_proxies(["127.0.0.0/8".parse().unwrap()], ProxyHeader::XForwardedFor)
}

#[test]
fn per_ip_and_global_in_redis_all_or_nothing() {
    let Some(server) = RedisServer::start("per_ip_and_global_in_redis_all_or_nothing") else {
        return;
    };
    runtime().block_on(async {
        let options = RedisOptions::default().key_prefix("t:");
        let url = server.url();
        let connect = |quota| RedisLimiter::connect_with(&url, quota, options.clone());
        let per_ip = connect(Quota::per_minute(1).with_burst(3)).await.unwrap();
        let global = connect(Quota::per_minute(1).with_burst(5)).await.unwrap();
        let layer = RateLimitLayer::new(
            RedisPolicy::new("per-ip", per_ip.clone(), behind_loopback_proxy())
                .and(RedisPolicy::new("global", global, SameKey)),
        );
        let app = Router::new()
            .route("/", get(|| async { "ok" }))
            .layer(layer.clone());
        let client = HttpClient::new(serve(app, true).await);

        let mut admitted = Vec::new();
        for ip in ["192.0.2.1", "192.0.2.2"] {
            let mut n = 0;
            for _ in 0..4 {
                let answer = client.get_as("/", ip).await;
                if answer.status == StatusCode::OK {
                    n += 1;
                } else {
                    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
                    let wait: u64 = answer.header("retry-after").unwrap().parse().unwrap();
                    assert!((1..=60).contains(&wait), "{wait}");
                }
            }
            admitted.push(n);
        }
        assert_eq!(admitted, [3, 2]);
        // All or nothing: the second client's refused requests spent nothing in its per-IP
        // bucket (admitted twice, one of its 3 tokens is left).
        let peek = per_ip.try_check_key_n("per-ip:192.0.2.2", 0).await.unwrap();
        assert_eq!(peek.unwrap().remaining(), 1);
        let probe = client.get_as("/", "192.0.2.2").await;
        let items = ratelimit(&probe);
        assert_eq!(items.len(), 2);
        assert!(items.iter().all(|(_, r, _)| *r == 0), "{items:?}");
        assert_eq!(layer.stats().allowed, 5);
    });
}

#[test]
fn a_redis_refund_gives_the_token_back() {
    let Some(server) = RedisServer::start("a_redis_refund_gives_the_token_back") else {
        return;
    };
    runtime().block_on(async {
        let limiter = RedisLimiter::connect(&server.url(), Quota::per_minute(1).with_burst(1))
            .await
            .unwrap();
        let layer =
            RateLimitLayer::builder(RedisPolicy::new("ip", limiter.clone(), ClientIp::new()))
                .refund_if(|response| response.status.is_server_error())
                .unwrap()
                .build();
        let app = Router::new()
            .route(
                "/boom",
                get(|| async { (axum::http::StatusCode::BAD_GATEWAY, "x") }),
            )
            .route("/", get(|| async { "ok" }))
            .layer(layer.clone());
        let client = HttpClient::new(serve(app, true).await);
        for _ in 0..3 {
            assert_eq!(
                client.get("/boom", &[]).await.status,
                StatusCode::BAD_GATEWAY
            );
            // The refund runs on its own task: wait for the bucket to be full again.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while limiter
                .try_check_key_n("ip:127.0.0.1", 0)
                .await
                .unwrap()
                .unwrap()
                .remaining()
                == 0
            {
                assert!(std::time::Instant::now() < deadline, "no refund");
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        }
        assert_eq!(layer.stats().refunded, 3);
        assert_eq!(client.get("/", &[]).await.status, StatusCode::OK);
        assert_eq!(
            client.get("/", &[]).await.status,
            StatusCode::TOO_MANY_REQUESTS
        );
    });
}
