//! Benchmarks of one limiter: the cost of a check on the allowed and denied paths, with the time
//! passed in and with a real clock, on one thread and under contention from 2, against the
//! mutex token bucket it replaces, governor 0.10, and the bare atomic operation beneath it.
//!
//! `cargo bench --bench core` runs everything in about two minutes (short warm-up and
//! measurement: a first look, not a publication run). Filter with e.g.
//! `cargo bench --bench core -- contention/allowed`.

use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;

#[path = "core/cached.rs"]
mod cached;
#[path = "core/contention.rs"]
mod contention;
#[path = "core/direct.rs"]
mod direct;
#[path = "core/subjects.rs"]
mod subjects;

/// Short runs: the whole target must finish in a few minutes on a shared 2-core machine.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = direct::allowed_at, direct::denied_at, direct::allowed_clock, direct::denied_clock,
        contention::contention
}
criterion_main!(benches);
