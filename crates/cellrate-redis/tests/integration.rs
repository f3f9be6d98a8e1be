//! The Redis backend's tests, against real `redis-server`s that the support modules start on
//! loopback (alone, a replica pair, Sentinel, a Cluster, TLS, behind a fault proxy). One
//! binary: each test binary would link the whole dependency tree again.

#[path = "redis_support/cluster.rs"]
mod cluster;
// The log lines a test captures (the HTTP layer's tests keep the helper).
#[path = "../../cellrate-http/tests/http_support/logs.rs"]
mod logs;
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
#[path = "../../../tests/test_files/mod.rs"]
mod test_files;
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
mod redis_memory;
mod redis_resharding;
mod redis_restart;
mod redis_time;
mod redis_tls;
mod redis_usage_errors;

/// Every `.rs` file of `tests/` is compiled by some test target.
#[test]
fn every_file_of_tests_is_compiled() {
    test_files::assert_every_file_compiled(env!("CARGO_MANIFEST_DIR"));
}
