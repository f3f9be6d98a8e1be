//! The layer's tests: real axum and tonic servers on loopback, real HTTP and gRPC clients, and
//! a real `redis-server` for the Redis policies. One binary: each test binary would link the
//! whole dependency tree again.

// The core's test helpers (a clock whose lag the test sets).
#[cfg(feature = "redis")]
#[path = "../../cellrate-redis/tests/redis_support/cluster.rs"]
#[allow(dead_code)] // the Redis tests use the rest of it
mod cluster;
#[path = "../../../tests/common/mod.rs"]
mod common;
mod http_support;
#[cfg(feature = "redis")]
#[path = "../../cellrate-redis/tests/redis_support/mod.rs"]
mod redis_support;
#[path = "../../../tests/test_files/mod.rs"]
mod test_files;

mod http_axum;
mod http_charges;
mod http_grpc;
mod http_missing_key;
mod http_options;
mod http_plain;
mod http_proxies;
mod http_redis;
mod http_redis_cluster;
mod http_redis_faults;

/// Every `.rs` file of `tests/` is compiled by some test target.
#[test]
fn every_file_of_tests_is_compiled() {
    test_files::assert_every_file_compiled(env!("CARGO_MANIFEST_DIR"));
}
