//! The loom models: every protocol of the crate with more than one atomic step, run against the
//! real code through the synchronisation shim (`sync.rs`), each beside a broken twin that must
//! fail. Compiled only under `cfg(all(test, loom))`, and run by `scripts/loom.sh`. Each lives
//! beside the code it models, so that it can reach private items, and no item of the crate
//! exists for it alone:
//!
//! - a limiter's bucket, its give-backs, reservations, `all_of` and quota changes:
//!   `engine/quota_cells/loom_tests.rs` and the files of its folder;
//! - the keyed table: `keyed/table/loom_tests.rs` and the files of its folder;
//! - the lanes of striped counts: `engine/lanes/loom_tests.rs`;
//! - `TickClock`'s refresher: `clock/tick_clock/loom_tests.rs`.
//!
//! How a twin breaks its step: a compare-and-swap made of a load and a store is the real code
//! run under `sync::test_faults::racy`; a step of the keyed table is broken by the table's
//! `Faults` switch (`keyed/table/loom_hooks.rs`); every other twin is written out in its model's
//! file, beside the model.

/// [`loom::thread::spawn`], followed by a yield of the spawning thread: how a model spawns a
/// thread when the spawning thread then goes on with steps of its own (a thread that only
/// spawns and joins uses `loom::thread::spawn`).
///
/// loom 0.7 can skip every schedule in which the new thread runs before the next atomic step
/// of the thread that spawned it (tokio-rs/loom#392): a model whose main thread checks,
/// cancels or changes a quota right after spawning would then never see the other thread's
/// work land first. The yield is a step at which loom explores running the other threads, so
/// that the step it skips is one that does nothing.
pub(crate) fn spawn<F, T>(f: F) -> loom::thread::JoinHandle<T>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    let handle = loom::thread::spawn(f);
    loom::thread::yield_now();
    handle
}

/// Runs each of `checks` on a thread of its own, and counts those that admitted.
pub(crate) fn admitted_on_threads<F>(checks: impl IntoIterator<Item = F>) -> u32
where
    F: FnOnce() -> bool + 'static,
{
    let threads: Vec<_> = checks.into_iter().map(loom::thread::spawn).collect();
    threads
        .into_iter()
        .map(|t| u32::from(t.join().unwrap()))
        .sum()
}

/// A model runner with a preemption bound: for models of three threads, and for the long
/// ones of two (each model's doc comment says why it needs its bound).
pub(crate) fn bounded(preemptions: usize) -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder
}

/// The broken twin of `all_of(limits).at(now).check()` (of `all_of(limits).check()` without
/// `now`): spends each limit's cost in turn, as the real check does, and when one refuses,
/// leaves the spends before it in place (no rollback).
pub(crate) fn check_without_rollback(
    limits: &[(&dyn crate::Limit, u32)],
    now: Option<crate::Nanos>,
) -> bool {
    limits.iter().all(|&(limit, cost)| {
        let bucket = limit.bucket_ref();
        let at = bucket.time(now.or_else(|| limit.at()));
        bucket.book(cost, at.as_u64(), 0).is_ok()
    })
}
