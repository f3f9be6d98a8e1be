//! Benchmarks of one limiter on one thread: the cost of a check on the allowed and denied
//! paths, with the time passed in and with a real clock, against the mutex token bucket it
//! replaces, governor 0.10, and the bare atomic operation beneath it. Threads sharing one
//! limiter are measured by `paired`, whose chunks prove that the threads overlapped.
//!
//! `cargo bench -p cellrate-benches -- '^direct/'` runs them in about a minute (short warm-up
//! and measurement: a first look, not a publication run). Filter with e.g.
//! `cargo bench -p cellrate-benches -- direct/allowed`.

use criterion::Criterion;

mod clocks;
mod direct;
pub mod read;
pub mod subjects;

/// Every group of this suite.
pub fn benches(c: &mut Criterion) {
    direct::allowed_at(c);
    direct::denied_at(c);
    direct::allowed_clock(c);
    direct::denied_clock(c);
}
