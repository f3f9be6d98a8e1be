//! The layer's tests: real axum and tonic servers on loopback, real HTTP and gRPC clients, and
//! a real `redis-server` for the Redis policies. One binary: each test binary would link the
//! whole dependency tree again.

// The core's test helpers (a clock whose lag the test sets).
#[path = "../../../tests/common/mod.rs"]
mod common;
mod http_support;
#[cfg(feature = "redis")]
#[path = "../../cellrate-redis/tests/redis_support/mod.rs"]
mod redis_support;

mod http_axum;
mod http_charges;
mod http_grpc;
mod http_missing_key;
mod http_options;
mod http_proxies;
mod http_redis;

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
