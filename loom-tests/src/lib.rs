//! Loom models of cellrate's concurrent protocols live in `tests/`; run them with `run.sh`.
//!
//! Without `--cfg loom` this crate is empty, so workspace builds skip it at no cost.

/// [`loom::thread::spawn`], followed by a yield of the spawning thread: how a model spawns a
/// thread when the spawning thread then goes on with steps of its own (a thread that only
/// spawns and joins uses `loom::thread::spawn`).
///
/// loom 0.7 can skip every schedule in which the new thread runs before the next atomic step
/// of the thread that spawned it (tokio-rs/loom#392): a model whose main thread checks,
/// cancels or changes a quota right after spawning would then never see the other thread's
/// work land first. The yield is a step at which loom explores running the other threads, so
/// that the step it skips is one that does nothing.
#[cfg(loom)]
pub fn spawn<F, T>(f: F) -> loom::thread::JoinHandle<T>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    let handle = loom::thread::spawn(f);
    loom::thread::yield_now();
    handle
}

/// A model runner with a preemption bound: for models of three threads, and for the long
/// ones of two (each model's doc comment says why it needs its bound).
#[cfg(loom)]
pub fn bounded(preemptions: usize) -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder
}
