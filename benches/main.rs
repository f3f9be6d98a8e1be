//! cellrate's benchmarks, one binary. From the workspace root:
//!
//! ```text
//! cargo bench -p cellrate-benches                       # every criterion group (core, keyed)
//! cargo bench -p cellrate-benches -- direct/            # criterion groups matching a regex
//! cargo bench -p cellrate-benches -- paired             # the headline rows, defaults paired
//! PAIRED_ROWS="1,000,000|hot" cargo bench -p cellrate-benches -- paired   # some rows only
//! cargo bench -p cellrate-benches -- hot_cas            # where a hot limiter's CASes fail
//! cargo bench -p cellrate-benches -- keyed_paired       # keyed ratios, paired
//! cargo bench -p cellrate-benches -- keyed_memory       # bytes per key
//! cargo bench -p cellrate-benches -- profile new 1000 1000000   # one loop, for callgrind
//! cargo bench -p cellrate-benches -- named_paired       # what naming a limiter costs
//! cargo bench -p cellrate-benches -- changed_paired     # what a quota change costs
//! cargo bench -p cellrate-benches --features redis -- redis
//! cargo bench -p cellrate-benches --features http -- http    # the HTTP layer, paired
//! cargo bench -p cellrate-benches --features http -- http_load   # its servers under wrk only
//! ```
//!
//! Add `--features quanta` for cellrate on QuantaClock beside governor. A first argument that
//! names a plain suite runs it; anything else goes to criterion (flags and a filter).
//! `BENCH_QUICK=1` runs any plain suite in a reduced size (a smoke test, not figures), and
//! `BENCH_RECORDS=<file>` has it append its results to a file for `benches/report.py`.

mod changed_paired;
mod core;
mod hot_cas;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "http")]
mod http_load;
#[cfg(feature = "http")]
mod http_threads;
mod keyed;
mod keyed_memory;
mod keyed_paired;
// The plain mutex bucket the core is compared with, shared with the tests.
#[path = "../tests/common/mutex_bucket.rs"]
mod mutex_bucket;
mod named_paired;
mod overlap;
mod paired;
mod profile;
mod record;
#[cfg(feature = "redis")]
mod redis;

use criterion::Criterion;
use std::time::Duration;

fn main() {
    // `cargo bench` passes `--bench`; the first other argument may name a plain suite.
    let suite = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    match suite.as_deref() {
        Some("paired") => paired::main(),
        Some("keyed_paired") => keyed_paired::main(),
        Some("keyed_memory") => keyed_memory::main(),
        Some("profile") => profile::main(),
        Some("named_paired") => named_paired::main(),
        Some("changed_paired") => changed_paired::main(),
        Some("hot_cas") => hot_cas::main(),
        #[cfg(feature = "redis")]
        Some("redis") => redis::main(),
        #[cfg(feature = "http")]
        Some("http") => http::main(),
        #[cfg(feature = "http")]
        Some("http_load") => http_load::main(),
        _ => criterion_suites(),
    }
}

/// The criterion groups, with short runs: a first look, not a publication run (override with
/// criterion's `--warm-up-time` and `--measurement-time`).
fn criterion_suites() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .configure_from_args();
    core::benches(&mut c);
    keyed::benches(&mut c);
    c.final_summary();
}
