//! What a Redis policy answers when Redis gives no decision, against a real `redis-server`
//! and a real axum server and client: a store that refuses the limiter (a user without
//! EVALSHA, a key holding other data, keys of two Cluster slots) is a fault of the server,
//! answered 500 (gRPC `INTERNAL`) under every failure policy and logged once with the fix;
//! an answer of the failure policy carries no bucket's figures.
#![cfg(all(feature = "axum", feature = "redis"))]

use crate::http_support;
use crate::redis_support;

use axum::{routing::get, Router};
use cellrate::Quota;
use cellrate_http::{ClientIp, RateLimitLayer, RedisPolicy, SameKey};
use cellrate_redis::{FailurePolicy, RedisLimiter, RedisOptions};
use http::StatusCode;
use http_support::logs::{runtime, Logs};
use http_support::{serve, HttpClient};
use redis_support::RedisServer;
use std::time::Duration;
use tracing::Level;

const POLICIES: [FailurePolicy; 3] = [
    FailurePolicy::FailOpen,
    FailurePolicy::FailClosed,
    FailurePolicy::Local { servers: 1 },
];

fn options(policy: FailurePolicy) -> RedisOptions {
    RedisOptions::default()
        .failure_policy(policy)
        .deadline(Duration::from_millis(200))
        .connection_timeout(Duration::from_millis(200))
}

async fn client_of(layer: RateLimitLayer<impl cellrate_http::Backend>) -> HttpClient {
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(layer);
    HttpClient::new(serve(app, true).await)
}

/// Five requests and a gRPC call through `layer`, each a 500 (gRPC `INTERNAL`) without a
/// bucket's figures; one error line in `logs` that names `fix`, the rest at debug level.
async fn each_is_a_fault(
    layer: RateLimitLayer<impl cellrate_http::Backend>,
    logs: &Logs,
    fix: &str,
) {
    let client = client_of(layer.clone()).await;
    for _ in 0..5 {
        let answer = client.get("/", &[]).await;
        assert_eq!(
            answer.status,
            StatusCode::INTERNAL_SERVER_ERROR,
            "{}",
            answer.body
        );
        assert!(answer.header("ratelimit").is_none(), "{answer:?}");
        assert!(answer.header("retry-after").is_none(), "{answer:?}");
        if cfg!(debug_assertions) {
            assert!(answer.body.contains(fix), "{}", answer.body);
        }
    }
    let call = client
        .get("/", &[("content-type", "application/grpc")])
        .await;
    assert_eq!(call.status, StatusCode::OK, "trailers-only");
    assert_eq!(call.header("grpc-status"), Some("13"), "{call:?}");
    assert!(call.header("grpc-retry-pushback-ms").is_none(), "{call:?}");
    let stats = layer.stats();
    assert_eq!(
        (stats.faults, stats.allowed, stats.denied),
        (6, 0, 0),
        "{stats:?}"
    );
    let errors = logs.lines(Level::ERROR, fix);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(logs.lines(Level::DEBUG, "the Redis store refused").len(), 5);
}

#[test]
fn a_redis_user_without_evalsha_is_a_server_fault_under_every_policy() {
    let Some(server) = RedisServer::start("a_redis_user_without_evalsha") else {
        return;
    };
    server.acl_user("limiter", &["~*", "+@all", "-evalsha"]);
    let url = server.url_as("limiter");
    for policy in POLICIES {
        let logs = Logs::default();
        logs.capture(|| {
            runtime().block_on(async {
                let quota = Quota::per_minute(1).with_burst(2);
                let limiter = RedisLimiter::connect_with(&url, quota, options(policy))
                    .await
                    .unwrap();
                let layer = RateLimitLayer::new(RedisPolicy::new("ip", limiter, ClientIp::new()));
                each_is_a_fault(layer, &logs, "ACL SETUSER").await;
            })
        });
    }
}

#[test]
fn a_key_holding_other_data_is_a_server_fault_under_every_policy() {
    let Some(server) = RedisServer::start("a_key_holding_other_data") else {
        return;
    };
    let _: () = server
        .query(
            redis::cmd("SET")
                .arg("cellrate:ip:127.0.0.1")
                .arg("session-data"),
        )
        .unwrap();
    for policy in POLICIES {
        let logs = Logs::default();
        logs.capture(|| {
            runtime().block_on(async {
                let quota = Quota::per_minute(1);
                let limiter = RedisLimiter::connect_with(&server.url(), quota, options(policy))
                    .await
                    .unwrap();
                let layer = RateLimitLayer::new(RedisPolicy::new("ip", limiter, ClientIp::new()));
                each_is_a_fault(layer, &logs, "key prefix no other data uses").await;
            })
        });
    }
    let stored: String = server
        .query(redis::cmd("GET").arg("cellrate:ip:127.0.0.1"))
        .unwrap();
    assert_eq!(stored, "session-data", "never overwritten");
}

#[test]
fn keys_of_two_cluster_slots_are_a_server_fault_under_every_policy() {
    // A one-node Cluster: every slot is served, and the keys of two slots are refused before
    // anything is sent.
    let Some(server) = RedisServer::start_one_node_cluster("keys_of_two_cluster_slots") else {
        return;
    };
    for policy in POLICIES {
        let logs = Logs::default();
        logs.capture(|| {
            runtime().block_on(async {
                let url = server.url();
                let seeds = [url.as_str()];
                let connect = |quota| RedisLimiter::connect_cluster(&seeds, quota, options(policy));
                let per_ip = connect(Quota::per_minute(1)).await.unwrap();
                let global = connect(Quota::per_second(100)).await.unwrap();
                // No hash tag in the prefix: `cellrate:ip:...` and `cellrate:all:` hash apart.
                let layer = RateLimitLayer::new(
                    RedisPolicy::new("ip", per_ip, ClientIp::new())
                        .and(RedisPolicy::new("all", global, SameKey)),
                );
                each_is_a_fault(layer, &logs, "{hash tag}").await;
            })
        });
    }
}

/// While Redis is down, FailOpen admits and FailClosed refuses with its retry time, and
/// neither tells a bucket's figures: there was no bucket to read.
#[test]
fn answers_of_the_failure_policy_carry_no_bucket_figures() {
    let Some(mut server) = RedisServer::start("answers_of_the_failure_policy") else {
        return;
    };
    runtime().block_on(async {
        let quota = Quota::per_minute(1).with_burst(3);
        let url = server.url();
        let connect = |policy| RedisLimiter::connect_with(&url, quota, options(policy));
        let open = connect(FailurePolicy::FailOpen).await.unwrap();
        let closed = connect(FailurePolicy::FailClosed).await.unwrap();
        let joint_open = connect(FailurePolicy::FailOpen).await.unwrap();
        let open = client_of(RateLimitLayer::new(RedisPolicy::new(
            "ip",
            open,
            ClientIp::new(),
        )))
        .await;
        let closed = client_of(RateLimitLayer::new(RedisPolicy::new(
            "ip",
            closed,
            ClientIp::new(),
        )))
        .await;
        let joint = client_of(RateLimitLayer::new(
            RedisPolicy::new("ip", joint_open.clone(), ClientIp::new())
                .and(RedisPolicy::new("all", joint_open, SameKey)),
        ))
        .await;
        // Up, Redis's answers carry the buckets' figures.
        for client in [&open, &closed, &joint] {
            let answer = client.get("/", &[]).await;
            assert_eq!(answer.status, StatusCode::OK);
            assert!(answer.header("ratelimit").is_some(), "{answer:?}");
        }
        server.kill();
        for client in [&open, &joint] {
            let answer = client.get("/", &[]).await;
            assert_eq!(answer.status, StatusCode::OK, "fail open");
            assert!(answer.header("ratelimit").is_none(), "{answer:?}");
            assert!(answer.header("ratelimit-policy").is_some(), "{answer:?}");
        }
        let refused = closed.get("/", &[]).await;
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS, "fail closed");
        assert_eq!(refused.header("retry-after"), Some("1"), "{refused:?}");
        assert!(refused.header("ratelimit").is_none(), "{refused:?}");
        let call = closed
            .get("/", &[("content-type", "application/grpc")])
            .await;
        assert_eq!(call.header("grpc-status"), Some("8"), "{call:?}");
        assert_eq!(
            call.header("grpc-retry-pushback-ms"),
            Some("1000"),
            "{call:?}"
        );
    });
}
