//! Redis policies on a real 3-node Cluster while the slot of their keys migrates: a client's
//! per-IP bucket and the global one, all or nothing, are decided by Redis, exactly, for a
//! client no node has seen (its key and, here, the global one on neither node).
#![cfg(all(feature = "axum", feature = "redis"))]

use crate::cluster::RedisCluster;
use crate::http_support;
use crate::redis_support;

use axum::{routing::get, Router};
use cellrate::Quota;
use cellrate_http::{ClientIp, ProxyHeader, RateLimitLayer, RedisPolicy, SameKey};
use cellrate_redis::{FailurePolicy, RedisOptions};
use http::StatusCode;
use http_support::{serve, HttpClient};
use std::time::Duration;

#[test]
fn a_new_client_is_limited_exactly_while_its_slot_migrates() {
    let Some(cluster) = RedisCluster::start("a_new_client_is_limited_while_its_slot_migrates")
    else {
        return;
    };
    let rt = redis_support::runtime();
    // The prefix's tag puts every key of the layer in one slot, as all-or-nothing needs.
    let options = RedisOptions::default()
        .key_prefix("rl:{app}:")
        .failure_policy(FailurePolicy::FailOpen)
        .deadline(Duration::from_millis(500));
    let per_ip = cluster.limiter(&rt, Quota::per_hour(2), options.clone());
    let global = cluster.limiter(&rt, Quota::per_hour(100), options);
    let slot = cluster.slot_of("rl:{app}:global:");
    let from = cluster.node_of("rl:{app}:global:");
    cluster.start_migration(slot, from, (from + 1) % 3);
    let behind_proxy =
        ClientIp::new().trust_proxies(["127.0.0.0/8".parse().unwrap()], ProxyHeader::XForwardedFor);
    let layer = RateLimitLayer::new(
        RedisPolicy::new("ip", per_ip.clone(), behind_proxy)
            .and(RedisPolicy::new("global", global, SameKey)),
    );
    let statuses: Vec<StatusCode> = rt.block_on(async {
        let app = Router::new()
            .route("/", get(|| async { "ok" }))
            .layer(layer.clone());
        let client = HttpClient::new(serve(app, true).await);
        let mut statuses = Vec::new();
        for _ in 0..10 {
            statuses.push(client.get_as("/", "192.0.2.1").await.status);
        }
        statuses
    });
    let admitted = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    assert_eq!(admitted, 2, "{statuses:?}");
    assert!(statuses[2..]
        .iter()
        .all(|s| *s == StatusCode::TOO_MANY_REQUESTS));
    let stats = per_ip.stats();
    assert_eq!((stats.failed_open, stats.errors), (0, 0), "{stats:?}");
}
