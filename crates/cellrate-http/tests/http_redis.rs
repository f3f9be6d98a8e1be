//! The layer with Redis policies, against a real `redis-server` the test starts, and a real
//! axum server and client on loopback.
#![cfg(all(feature = "axum", feature = "redis"))]

use crate::http_support;
use crate::redis_support;

use axum::{routing::get, Router};
use cellrate::Quota;
use cellrate_http::{ClientIp, HeaderKey, ProxyHeader, RateLimitLayer, RedisPolicy, SameKey};
use cellrate_redis::{RedisLimiter, RedisOptions};
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
        let options = redis_support::patient().key_prefix("t:");
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
        // Each policy tells its own figures: the client's bucket has one token, the global
        // one none.
        let probe = client.get_as("/", "192.0.2.2").await;
        let items = ratelimit(&probe);
        let r: Vec<(&str, i64)> = items.iter().map(|(n, r, _)| (n.as_str(), *r)).collect();
        assert_eq!(r, [("per-ip", 1), ("global", 0)], "{items:?}");
        assert_eq!(layer.stats().allowed, 5);
    });
}

#[test]
fn a_redis_refund_gives_the_token_back() {
    let Some(server) = RedisServer::start("a_redis_refund_gives_the_token_back") else {
        return;
    };
    runtime().block_on(async {
        let limiter = RedisLimiter::connect_with(
            &server.url(),
            Quota::per_minute(1).with_burst(1),
            redis_support::patient(),
        )
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

#[test]
fn joint_redis_refusals_tell_each_policys_own_figures() {
    let Some(server) = RedisServer::start("joint_redis_refusals_tell_each_policys_own_figures")
    else {
        return;
    };
    runtime().block_on(async {
        let options = redis_support::patient().key_prefix("t:");
        let url = server.url();
        let connect = |quota| RedisLimiter::connect_with(&url, quota, options.clone());
        let per_ip = connect(Quota::per_minute(1).with_burst(3)).await.unwrap();
        let global = connect(Quota::per_second(100)).await.unwrap();
        let layer = RateLimitLayer::builder(
            RedisPolicy::new("per-ip", per_ip, behind_loopback_proxy())
                .and(RedisPolicy::new("global", global, SameKey)),
        )
        .problem_json(true)
        .build();
        let app = Router::new()
            .route("/", get(|| async { "ok" }))
            .layer(layer);
        let client = HttpClient::new(serve(app, true).await);
        for _ in 0..3 {
            assert_eq!(client.get_as("/", "192.0.2.9").await.status, StatusCode::OK);
        }
        let refused = client.get_as("/", "192.0.2.9").await;
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        let wait: i64 = refused.header("retry-after").unwrap().parse().unwrap();
        let items = ratelimit(&refused);
        let per_ip = items.iter().find(|(n, _, _)| n == "per-ip").unwrap();
        let global = items.iter().find(|(n, _, _)| n == "global").unwrap();
        // The client's bucket: empty, its next token a minute away.
        assert_eq!((per_ip.1, per_ip.2), (0, 60), "{items:?}");
        // The global bucket: about 97 left (it refills 1 per 10 ms), its next token within a
        // second.
        assert!((97..=100).contains(&global.1) && global.2 <= 1, "{items:?}");
        for (name, _, t) in &items {
            assert!(wait >= *t, "Retry-After {wait} earlier than {name}'s t={t}");
        }
        assert_eq!(wait, 60);
        assert!(
            refused.body.contains(r#""violated-policies":["per-ip"]"#),
            "{}",
            refused.body
        );
    });
}

#[test]
fn client_keys_become_bounded_redis_key_names() {
    let Some(server) = RedisServer::start("client_keys_become_bounded_redis_key_names") else {
        return;
    };
    runtime().block_on(async {
        let limiter = RedisLimiter::connect_with(
            &server.url(),
            Quota::per_minute(1).with_burst(2),
            redis_support::patient(),
        )
        .await
        .unwrap();
        let layer = RateLimitLayer::new(RedisPolicy::new(
            "key",
            limiter.clone(),
            HeaderKey::new(http::HeaderName::from_static("x-api-key")),
        ));
        let app = Router::new()
            .route("/", get(|| async { "ok" }))
            .layer(layer);
        let client = HttpClient::new(serve(app, true).await);
        let long = "k".repeat(4000);
        let tagged = "{hot}rotating-7";
        for key in ["plain-key", long.as_str(), tagged, "100%"] {
            assert_eq!(
                client.get("/", &[("x-api-key", key)]).await.status,
                StatusCode::OK
            );
        }
        let names: Vec<String> = server.query(redis::cmd("KEYS").arg("*")).unwrap();
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(
            names.contains(&"cellrate:key:plain-key".to_owned()),
            "{names:?}"
        );
        for name in &names {
            assert!(name.len() <= "cellrate:key:".len() + 64, "{name}");
            assert!(!name.contains('{'), "a client chose a hash tag: {name}");
        }
        // The same long key finds the same bucket: its second and third requests are the
        // bucket's last token and a refusal.
        assert_eq!(
            client.get("/", &[("x-api-key", &long)]).await.status,
            StatusCode::OK
        );
        assert_eq!(
            client.get("/", &[("x-api-key", &long)]).await.status,
            StatusCode::TOO_MANY_REQUESTS
        );
    });
}

#[test]
fn a_redis_refund_gives_back_under_the_quota_chosen_per_request() {
    let Some(server) = RedisServer::start("a_redis_refund_under_the_per_request_quota") else {
        return;
    };
    runtime().block_on(async {
        // The limiter's own quota is a token an hour; the request's plan one per 6 s.
        let limiter =
            RedisLimiter::connect_with(&server.url(), Quota::per_hour(1), redis_support::patient())
                .await
                .unwrap();
        let plan = Quota::per_minute(10).with_burst(2);
        let layer = RateLimitLayer::builder(
            RedisPolicy::new("ip", limiter.clone(), ClientIp::new())
                .quota_per_request(move |_| plan),
        )
        .refund_if(|response| response.status == axum::http::StatusCode::CONFLICT)
        .expect("a refund under the request's quota is exact")
        .build();
        let app = Router::new()
            .route(
                "/taken",
                get(|| async { (axum::http::StatusCode::CONFLICT, "x") }),
            )
            .route("/", get(|| async { "ok" }))
            .layer(layer.clone());
        let client = HttpClient::new(serve(app, true).await);
        assert_eq!(client.get("/", &[]).await.status, StatusCode::OK);
        assert_eq!(client.get("/taken", &[]).await.status, StatusCode::CONFLICT);
        // The refund runs on its own task: wait for a token to come back.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let peek = loop {
            let peek = limiter
                .try_check_key_n_with_quota("ip:127.0.0.1", 0, &plan)
                .await
                .unwrap()
                .unwrap();
            if peek.remaining() > 0 {
                break peek;
            }
            assert!(std::time::Instant::now() < deadline, "no refund");
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        };
        // One token back under the plan (6 s), not the limiter's quota (an hour, which would
        // fill the bucket): it holds one, not two.
        assert_eq!(peek.remaining(), 1);
    });
}

#[test]
fn the_local_fallback_of_a_joint_redis_check_tells_each_policys_own_figures() {
    let Some(mut server) = RedisServer::start("local_fallback_joint_http_figures") else {
        return;
    };
    runtime().block_on(async {
        let options = RedisOptions::default()
            .key_prefix("t:")
            .failure_policy(cellrate_redis::FailurePolicy::Local { servers: 1 })
            .deadline(std::time::Duration::from_millis(100))
            .connection_timeout(std::time::Duration::from_millis(100));
        let url = server.url();
        let connect = |quota| RedisLimiter::connect_with(&url, quota, options.clone());
        let per_ip = connect(Quota::per_minute(1).with_burst(3)).await.unwrap();
        let global = connect(Quota::per_second(100)).await.unwrap();
        let layer = RateLimitLayer::builder(
            RedisPolicy::new("per-ip", per_ip, behind_loopback_proxy())
                .and(RedisPolicy::new("global", global, SameKey)),
        )
        .problem_json(true)
        .build();
        let app = Router::new()
            .route("/", get(|| async { "ok" }))
            .layer(layer);
        let client = HttpClient::new(serve(app, true).await);
        // Redis goes away: the local fallback decides.
        server.kill();
        for _ in 0..3 {
            assert_eq!(client.get_as("/", "192.0.2.9").await.status, StatusCode::OK);
        }
        let refused = client.get_as("/", "192.0.2.9").await;
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        let wait: i64 = refused.header("retry-after").unwrap().parse().unwrap();
        let items = ratelimit(&refused);
        let per_ip = items.iter().find(|(n, _, _)| n == "per-ip").unwrap();
        let global = items.iter().find(|(n, _, _)| n == "global").unwrap();
        assert_eq!((per_ip.1, per_ip.2), (0, 60), "{items:?}");
        assert!((97..=100).contains(&global.1) && global.2 <= 1, "{items:?}");
        for (name, _, t) in &items {
            assert!(wait >= *t, "Retry-After {wait} earlier than {name}'s t={t}");
        }
        assert_eq!(wait, 60);
        assert!(
            refused.body.contains(r#""violated-policies":["per-ip"]"#),
            "{}",
            refused.body
        );
    });
}

#[test]
fn a_quota_chosen_per_request_is_told_as_redis_enforces_it() {
    let Some(server) = RedisServer::start("a_quota_chosen_per_request_is_told_as_enforced") else {
        return;
    };
    runtime().block_on(async {
        let limiter =
            RedisLimiter::connect_with(&server.url(), Quota::per_hour(1), redis_support::patient())
                .await
                .unwrap();
        // An interval 1 ns past a whole µs: Redis enforces 999 ns more per token, 0.1 s over
        // the burst; a `t` worked out from the interval as given would come 0.1 s early for
        // an empty bucket and round past Retry-After.
        let plan = Quota::try_new(std::time::Duration::from_nanos(1_999_999_001), 100_000).unwrap();
        let layer = RateLimitLayer::builder(
            RedisPolicy::new("ip", limiter, ClientIp::new()).quota_per_request(move |_| plan),
        )
        .cost(|head| {
            if head.uri.path() == "/all" {
                100_000
            } else {
                1
            }
        })
        .build();
        let app = Router::new()
            .route("/", get(|| async { "ok" }))
            .route("/all", get(|| async { "ok" }))
            .layer(layer);
        let client = HttpClient::new(serve(app, true).await);
        assert_eq!(client.get("/all", &[]).await.status, StatusCode::OK);
        let refused = client.get("/", &[]).await;
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        let wait: i64 = refused.header("retry-after").unwrap().parse().unwrap();
        let items = ratelimit(&refused);
        assert_eq!(wait, 2, "{items:?}");
        assert_eq!(items[0].2, 2, "t of the next token: {items:?}");
    });
}

/// A layer that skips requests without a key still refuses one whose trusted proxy wrote a
/// hop it cannot read: for a Redis policy as for an in-process one, rotating such hops is no
/// way past the limit.
#[test]
fn a_redis_policy_never_skips_a_hop_a_trusted_proxy_wrote_unreadably() {
    let Some(server) = RedisServer::start("a_redis_policy_never_skips_an_unreadable_hop") else {
        return;
    };
    runtime().block_on(async {
        let options = redis_support::patient().key_prefix("skip:");
        let limiter = RedisLimiter::connect_with(&server.url(), Quota::per_minute(1), options)
            .await
            .unwrap();
        let layer =
            RateLimitLayer::builder(RedisPolicy::new("ip", limiter, behind_loopback_proxy()))
                .missing_key(cellrate_http::MissingKey::Skip)
                .build();
        let app = Router::new()
            .route("/", get(|| async { "ok" }))
            .layer(layer);
        let client = HttpClient::new(serve(app, true).await);
        for hop in ["unknown", "_hidden", "garbage", "1.2.3.4,,"] {
            let answer = client.get("/", &[("x-forwarded-for", hop)]).await;
            assert_eq!(
                answer.status,
                StatusCode::BAD_REQUEST,
                "{hop}: {}",
                answer.body
            );
        }
    });
}

#[test]
fn redis_admissions_without_headers_come_after_the_decision() {
    // Without headers on admissions the layer decides through the plain path, whose Redis
    // decision is still to come when the service is called.
    let Some(server) = RedisServer::start("redis_admissions_without_headers") else {
        return;
    };
    runtime().block_on(async {
        let options = redis_support::patient().key_prefix("plain:");
        let limiter =
            RedisLimiter::connect_with(&server.url(), Quota::per_minute(1).with_burst(3), options)
                .await
                .unwrap();
        let layer =
            RateLimitLayer::builder(RedisPolicy::new("per-ip", limiter, behind_loopback_proxy()))
                .headers_on_allowed(false)
                .build();
        let app = Router::new()
            .route("/", get(|| async { "ok" }))
            .layer(layer.clone());
        let client = HttpClient::new(serve(app, true).await);
        for _ in 0..3 {
            let answer = client.get_as("/", "192.0.2.7").await;
            assert_eq!(answer.status, StatusCode::OK);
            assert!(answer.header("ratelimit").is_none(), "{answer:?}");
        }
        let refused = client.get_as("/", "192.0.2.7").await;
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(ratelimit(&refused), [("per-ip".into(), 0, 60)]);
        assert!(refused.header("retry-after").is_some());
        let stats = layer.stats();
        assert_eq!((stats.allowed, stats.denied), (3, 1));
    });
}
