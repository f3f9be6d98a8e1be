//! Benchmarks of one limiter: the cost of a check on the allowed and denied paths, with the time
//! passed in and with a real clock, on one thread and under contention from 2, against the
//! mutex token bucket it replaces, governor 0.10, and the bare atomic operation beneath it.
//!
//! `cargo bench -p cellrate-benches -- '^(direct|contention)/'` runs them in about two minutes
//! (short warm-up and measurement: a first look, not a publication run). Filter with e.g.
//! `cargo bench -p cellrate-benches -- contention/allowed`.

use criterion::Criterion;

mod cached;
pub mod contention;
mod direct;
pub mod subjects;

/// Every group of this suite.
pub fn benches(c: &mut Criterion) {
    direct::allowed_at(c);
    direct::denied_at(c);
    direct::allowed_clock(c);
    direct::denied_clock(c);
    contention::contention(c);
}
