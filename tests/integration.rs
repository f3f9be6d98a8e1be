//! The integration tests, one module per file of `tests/`, compiled into one binary: each test
//! binary would link the whole dependency tree and instantiate the same generic code again,
//! which costs far more build time than the tests take to run.
//!
//! Not here, each its own binary (the `[[test]]` entries of Cargo.toml): `cached_clock_thread`
//! and `tick_clock_process`, which count the process's threads (other tests would start clocks
//! of their own), and `keyed_churn`, the test `scripts/miri.sh` runs. A new file in `tests/`
//! must be listed here or there; `every_file_of_tests_is_compiled` below checks that it is.

mod common;
#[cfg(feature = "metrics")]
mod metrics_support;

mod all_of;
mod baseline;
mod cached_clock;
mod clock;
mod concurrency;
#[cfg(feature = "async")]
mod default_clock;
mod give_back;
mod give_back_schedules;
mod keyed;
mod keyed_batch;
mod keyed_differential;
mod keyed_overflow;
mod keyed_shaping;
mod keyed_tenure;
mod limiter;
mod metrics;
mod module_graph;
mod nanos;
mod overflow;
mod pace;
mod pace_refusal;
mod pace_write;
mod quota;
mod quota_change;
mod quota_split;
mod reservation;
mod retry_lag;
mod set_quota;
mod set_quota_differential;
mod stats;
mod tick_clock;
mod wait;
mod worked_examples;

/// Every `.rs` file directly in `tests/` is a module above or a `[[test]]` of Cargo.toml
/// (`autotests = false`: Cargo would not notice a file that is neither).
#[test]
fn every_file_of_tests_is_compiled() {
    let this = include_str!("integration.rs");
    let manifest = include_str!("../Cargo.toml");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/") {
        let name = entry.expect("an entry of tests/").file_name();
        let name = name.to_string_lossy();
        let Some(stem) = name.strip_suffix(".rs") else {
            continue;
        };
        let included = this
            .lines()
            .any(|l| l == format!("mod {stem};") || l == format!("#[path = \"{name}\"]"));
        let own_binary = manifest.contains(&format!("path = \"tests/{name}\""));
        if !included && !own_binary && stem != "integration" {
            missing.push(name.into_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "not compiled by any test target: {missing:?}"
    );
}
