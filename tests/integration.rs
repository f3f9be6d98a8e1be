//! The integration tests, one module per file of `tests/`, compiled into one binary: each test
//! binary would link the whole dependency tree and instantiate the same generic code again,
//! which costs far more build time than the tests take to run.
//!
//! Not here, each its own binary (the `[[test]]` entries of Cargo.toml): `tick_clock_process`,
//! which counts the process's threads (other tests would start clocks of their own), and
//! `keyed_churn`, the test `scripts/miri.sh` runs. A new file in `tests/` must be listed here or
//! there; `every_file_of_tests_is_compiled` below checks that it is.

mod common;
#[cfg(feature = "metrics")]
mod metrics_support;
mod oracle;
mod test_files;

mod all_of;
mod at_forms;
mod baseline;
mod clock;
mod concurrency;
mod crossings;
#[cfg(feature = "async")]
mod default_clock;
mod doc_paths;
mod give_back;
mod give_back_schedules;
mod keyed;
mod keyed_batch;
mod keyed_differential;
mod keyed_flood;
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
mod quota_split;
mod replay;
mod reservation;
mod retry_lag;
mod set_quota;
mod stats;
mod tick_clock;
mod wait;
mod worked_examples;

/// Every `.rs` file of `tests/` is compiled by some test target.
#[test]
fn every_file_of_tests_is_compiled() {
    test_files::assert_every_file_compiled(env!("CARGO_MANIFEST_DIR"));
}
