//! `direct/*`: one limiter on one thread, each check on one path, against its physical floor.
//!
//! The allowed groups time each limiter twice: its verdict alone (`is_ok()`), and with its
//! outcome read (`_read`: cellrate's `remaining()` and `reset_after()`, governor's snapshot;
//! `read.rs`).
//!
//! `_at` groups pass the time in (cellrate and the mutex bucket at [`NOW`](super::subjects::NOW),
//! governor on its standing-still test clock); `_clock` groups read each limiter's default clock,
//! and with `--features quanta` also cellrate on its TSC clock; `cellrate_instant` is cellrate
//! on `MonotonicClock` (an `Instant` read per check). `_cached` subjects run on a
//! clock refreshed every millisecond by a background thread (cellrate's `TickClock` at its
//! cached time, governor's `QuantaUpkeepClock`).

use super::read::{CellrateAtRead, CellrateRead, GovernorFakeRead, GovernorRead};
use super::subjects::{
    time_spends, CellrateAt, CellrateClock, FloorCas, FloorClockRead, FloorLoad, GovernorClock,
    GovernorFake, MutexAt, MutexClock, Path, Spend,
};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};

/// The allowed path with the time passed in, and the bare CAS it is built on.
pub fn allowed_at(c: &mut Criterion) {
    let path = Path::Allowed;
    let mut group = c.benchmark_group("direct/allowed_at");
    bench_spends(&mut group, "cellrate", path, || CellrateAt::new(path));
    bench_spends(&mut group, "mutex_bucket", path, || MutexAt::new(path));
    bench_spends(&mut group, "governor", path, || GovernorFake::new(path));
    bench_spends(&mut group, "floor_cas", path, FloorCas::new);
    bench_spends(&mut group, "cellrate_read", path, || {
        CellrateAtRead::new(path)
    });
    bench_spends(&mut group, "governor_read", path, || {
        GovernorFakeRead::new(path)
    });
    group.finish();
}

/// The denied path with the time passed in, and the bare load it is built on.
pub fn denied_at(c: &mut Criterion) {
    let path = Path::Denied;
    let mut group = c.benchmark_group("direct/denied_at");
    bench_spends(&mut group, "cellrate", path, || CellrateAt::new(path));
    bench_spends(&mut group, "mutex_bucket", path, || MutexAt::new(path));
    bench_spends(&mut group, "governor", path, || GovernorFake::new(path));
    bench_spends(&mut group, "floor_load", path, FloorLoad::new);
    group.finish();
}

/// The allowed path on each limiter's default clock, and the cost of reading cellrate's clock.
pub fn allowed_clock(c: &mut Criterion) {
    let path = Path::Allowed;
    let mut group = c.benchmark_group("direct/allowed_clock");
    bench_spends(&mut group, "cellrate", path, || CellrateClock::new(path));
    bench_spends(&mut group, "mutex_bucket", path, || MutexClock::new(path));
    bench_spends(&mut group, "governor", path, || GovernorClock::new(path));
    bench_spends(&mut group, "floor_clock_read", path, FloorClockRead::new);
    bench_spends(&mut group, "cellrate_read", path, || {
        CellrateRead::new(path)
    });
    bench_spends(&mut group, "governor_read", path, || {
        GovernorRead::new(path)
    });
    bench_cached(&mut group, path);
    #[cfg(feature = "quanta")]
    {
        use super::subjects::{CellrateQuanta, FloorQuantaRead};
        bench_spends(&mut group, "cellrate_quanta", path, || {
            CellrateQuanta::new(path)
        });
        bench_spends(&mut group, "floor_quanta_read", path, FloorQuantaRead::new);
    }
    group.finish();
}

/// The denied path on each limiter's default clock.
pub fn denied_clock(c: &mut Criterion) {
    let path = Path::Denied;
    let mut group = c.benchmark_group("direct/denied_clock");
    bench_spends(&mut group, "cellrate", path, || CellrateClock::new(path));
    bench_spends(&mut group, "mutex_bucket", path, || MutexClock::new(path));
    bench_spends(&mut group, "governor", path, || GovernorClock::new(path));
    bench_cached(&mut group, path);
    #[cfg(feature = "quanta")]
    {
        use super::subjects::CellrateQuanta;
        bench_spends(&mut group, "cellrate_quanta", path, || {
            CellrateQuanta::new(path)
        });
    }
    group.finish();
}

/// cellrate and governor on their clocks refreshed by a background thread, and cellrate on
/// the exact clock.
fn bench_cached(group: &mut BenchmarkGroup<'_, WallTime>, path: Path) {
    use super::clocks::{CellrateCached, CellrateInstant, GovernorCached};
    bench_spends(group, "cellrate_cached", path, || CellrateCached::new(path));
    bench_spends(group, "governor_cached", path, || GovernorCached::new(path));
    bench_spends(group, "cellrate_instant", path, || {
        CellrateInstant::new(path)
    });
}

/// Times single checks of a fresh subject per sample, then asserts (untimed) that every check
/// took `path`.
fn bench_spends<S: Spend>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    path: Path,
    make: impl Fn() -> S,
) {
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let subject = make();
            let (elapsed, allowed) = time_spends(&subject, iters);
            path.assert_outcomes(allowed, iters);
            elapsed
        })
    });
}
