//! The Redis backend's tests, against real `redis-server`s that the support modules start on
//! loopback (alone, a replica pair, Sentinel, a Cluster, TLS, behind a fault proxy). One
//! binary: each test binary would link the whole dependency tree again.

#[path = "redis_support/cluster.rs"]
mod cluster;
#[cfg(feature = "metrics")]
#[path = "../../../tests/metrics_support/mod.rs"]
#[allow(dead_code)] // the core's tests use the rest of it
mod metrics_support;
#[path = "redis_support/proxy.rs"]
mod proxy;
mod redis_support;
#[path = "redis_support/sentinel.rs"]
mod sentinel;
#[path = "redis_support/stand_in.rs"]
mod stand_in;
#[path = "redis_support/tls.rs"]
mod tls;

mod metrics_redis;
mod redis_batches;
mod redis_cluster;
mod redis_concurrency;
mod redis_config;
mod redis_differential;
mod redis_failover;
mod redis_failures;
mod redis_faults;
mod redis_give_back;
mod redis_keys;
mod redis_resharding;
mod redis_restart;
mod redis_time;
mod redis_tls;
mod redis_usage_errors;

/// Every `.rs` file directly in `tests/` is a module above (`autotests = false`: Cargo would
/// not notice a file that is not).
#[test]
fn every_file_of_tests_is_compiled() {
    let this = include_str!("integration.rs");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/") {
        let name = entry.expect("an entry of tests/").file_name();
        let name = name.to_string_lossy();
        let Some(stem) = name.strip_suffix(".rs") else {
            continue;
        };
        if !this.lines().any(|l| l == format!("mod {stem};")) && stem != "integration" {
            missing.push(name.into_owned());
        }
    }
    assert!(missing.is_empty(), "not compiled: {missing:?}");
}
