//! Chunks of work on one or more threads, with the proof that the threads ran at the same time.
//!
//! A figure of two threads means something only if both were on a core together: on a shared
//! machine the two can take turns on one core and never meet on a cache line, and their start
//! and end times cannot tell. So every chunk
//! - is released by a spinning barrier: the last thread to arrive reads the time, and every
//!   thread runs batches of work from that release to one common deadline (a chunk of several
//!   threads lasts at least 10 ms, far longer than waking a thread);
//! - records each thread's start, end and own CPU time (`CLOCK_THREAD_CPUTIME_ID`);
//! - counts only if the interval that all threads shared is at least [`MIN_SHARE`] of the
//!   chunk's span (first start to last end), and every thread was on a core for at least
//!   [`MIN_SHARE`] of that shared interval.
//!
//! A thread's CPU time is read over its own interval, which contains the shared one, so its
//! time off a core inside the shared interval is at most its time off a core over its own: the
//! test can drop a chunk that did overlap, never keep one that did not. A single-thread chunk
//! passes the same test (on a core for [`MIN_SHARE`] of its interval).
//!
//! A subject that sleeps by design (the mutex bucket: a thread that finds the lock taken waits
//! in the kernel) is off a core in every chunk where its design costs it, so the CPU-time test
//! would keep only its lucky chunks. Its chunks are judged by [`Run::runnable`] instead: the
//! time each thread waited for a core while ready to run (`run_delay` in
//! `/proc/thread-self/schedstat`, read around the thread's interval), which a sleep on a lock
//! does not count and time-slicing with another thread does. Where that file is missing, the
//! CPU-time test applies to them too.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The least share of the span that the threads must share, and of the shared interval that
/// each thread must have spent on a core.
pub const MIN_SHARE: f64 = 0.9;

/// One thread's part of a chunk.
#[derive(Clone, Copy, Debug)]
pub struct ThreadRun {
    pub start: Instant,
    pub end: Instant,
    /// The thread's CPU time between `start` and `end`.
    pub cpu: Duration,
    /// Operations the thread completed.
    pub ops: u64,
    /// The time the thread waited for a core while ready to run, over a little more than its
    /// interval; `None` where the kernel does not say.
    pub run_delay: Option<Duration>,
}

/// One chunk on all its threads.
#[derive(Clone, Debug)]
pub struct Run {
    pub threads: Vec<ThreadRun>,
}

impl Run {
    /// Operations of all threads.
    pub fn ops(&self) -> u64 {
        self.threads.iter().map(|t| t.ops).sum()
    }

    /// The share of all operations that the thread with the fewest made: 1/threads for an
    /// even split, near 0 where one thread kept the shared line and the others waited.
    pub fn slower_share(&self) -> f64 {
        let least = self.threads.iter().map(|t| t.ops).min().unwrap_or(0);
        least as f64 / self.ops().max(1) as f64
    }

    /// The earliest and the latest of the threads' starts, and of their ends.
    fn bounds(&self) -> ((Instant, Instant), (Instant, Instant)) {
        let extremes = |at: fn(&ThreadRun) -> Instant| {
            let times = self.threads.iter().map(at);
            let first = times.clone().min().expect("a thread");
            (first, times.max().expect("a thread"))
        };
        (extremes(|t| t.start), extremes(|t| t.end))
    }

    /// From the first start to the last end.
    pub fn span(&self) -> Duration {
        let ((first_start, _), (_, last_end)) = self.bounds();
        last_end - first_start
    }

    /// Wall ns per operation over all threads: the span over every thread's operations.
    pub fn ns_per_op(&self) -> f64 {
        self.span().as_nanos() as f64 / self.ops().max(1) as f64
    }

    /// The interval every thread was running: from the last start to the first end.
    pub fn shared(&self) -> Duration {
        let ((_, last_start), (first_end, _)) = self.bounds();
        first_end.saturating_duration_since(last_start)
    }

    /// The least share of the shared interval that any thread was provably on a core: one minus
    /// its time off a core over its own interval (wall minus CPU time) over the shared interval.
    pub fn on_core(&self) -> f64 {
        let shared = self.shared().as_nanos() as f64;
        if shared == 0.0 {
            return 0.0;
        }
        self.threads
            .iter()
            .map(|t| {
                let off = (t.end - t.start).saturating_sub(t.cpu).as_nanos() as f64;
                (1.0 - off / shared).max(0.0)
            })
            .fold(1.0, f64::min)
    }

    /// The shared interval over the span.
    pub fn shared_share(&self) -> f64 {
        self.shared().as_nanos() as f64 / self.span().as_nanos().max(1) as f64
    }

    /// Whether the chunk counts: its threads shared at least [`MIN_SHARE`] of its span, and each
    /// was on a core for at least [`MIN_SHARE`] of that.
    pub fn overlapped(&self) -> bool {
        self.shared_share() >= MIN_SHARE && self.on_core() >= MIN_SHARE
    }

    /// The least share of the shared interval that any thread spent not waiting for a core:
    /// running, or asleep by its own choice. `None` where the kernel does not report waits.
    pub fn runnable(&self) -> Option<f64> {
        let shared = self.shared().as_nanos() as f64;
        self.threads.iter().try_fold(1.0f64, |least, t| {
            let waited = t.run_delay?.as_nanos() as f64;
            Some(least.min((1.0 - waited / shared.max(1.0)).max(0.0)))
        })
    }

    /// [`Run::overlapped`] for a subject that sleeps by design: every thread spent at least
    /// [`MIN_SHARE`] of the shared interval running or asleep by its own choice, never waiting
    /// for a core (the CPU-time test where the kernel does not report waits).
    pub fn overlapped_or_asleep(&self) -> bool {
        match self.runnable() {
            Some(share) => self.shared_share() >= MIN_SHARE && share >= MIN_SHARE,
            None => self.overlapped(),
        }
    }
}

/// Runs a chunk of `length` on `threads` threads (one of them the caller's): each thread gets
/// `setup(thread)` before the barrier, then calls `batch(&mut state, thread, batch index)`, which
/// must complete `per_batch` operations, until the common deadline. Returns the run and each
/// thread's state. The clock is read once per batch, so a batch should take microseconds.
pub fn run<S: Send>(
    threads: usize,
    length: Duration,
    per_batch: u64,
    setup: impl Fn(usize) -> S + Sync,
    batch: impl Fn(&mut S, usize, u64) + Sync,
) -> (Run, Vec<S>) {
    assert!(threads >= 1, "a chunk needs a thread");
    let barrier = SpinBarrier::new(threads);
    let body = |t: usize| {
        let mut state = setup(t);
        let delay_start = run_delay();
        let release = barrier.wait();
        let deadline = release + length;
        let start = Instant::now();
        let cpu_start = thread_cpu();
        let mut batches = 0;
        loop {
            batch(&mut state, t, batches);
            batches += 1;
            if Instant::now() >= deadline {
                break;
            }
        }
        let cpu = thread_cpu().saturating_sub(cpu_start);
        let end = Instant::now();
        let run_delay = run_delay()
            .zip(delay_start)
            .map(|(end, start)| end.saturating_sub(start));
        let ops = batches * per_batch;
        let run = ThreadRun {
            start,
            end,
            cpu,
            ops,
            run_delay,
        };
        (run, state)
    };
    let results: Vec<(ThreadRun, S)> = std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads)
            .map(|t| {
                let body = &body;
                scope.spawn(move || body(t))
            })
            .collect();
        let mine = body(0);
        std::iter::once(mine)
            .chain(
                others
                    .into_iter()
                    .map(|h| h.join().expect("a bench thread panicked")),
            )
            .collect()
    });
    let (runs, states) = results.into_iter().unzip();
    (Run { threads: runs }, states)
}

/// [`run`] with no per-thread state.
pub fn run_batches(
    threads: usize,
    length: Duration,
    per_batch: u64,
    batch: impl Fn(usize, u64) + Sync,
) -> Run {
    run(threads, length, per_batch, |_| (), |_, t, i| batch(t, i)).0
}

/// A barrier whose threads spin (no futex, no wake-up latency), and which hands all of them
/// the instant the last one arrived.
struct SpinBarrier {
    threads: usize,
    arrived: AtomicUsize,
    /// ns from `base` to the release; `u64::MAX` until the last thread arrives.
    release_ns: AtomicU64,
    base: Instant,
}

impl SpinBarrier {
    fn new(threads: usize) -> SpinBarrier {
        SpinBarrier {
            threads,
            arrived: AtomicUsize::new(0),
            release_ns: AtomicU64::new(u64::MAX),
            base: Instant::now(),
        }
    }

    /// Waits for every thread; returns the release instant.
    fn wait(&self) -> Instant {
        // Relaxed: the count orders nothing; the release below carries the only message.
        if self.arrived.fetch_add(1, Ordering::Relaxed) + 1 == self.threads {
            let at = self.base.elapsed().as_nanos() as u64;
            // Release: pairs with the Acquire load, so every thread sees the same instant.
            self.release_ns.store(at, Ordering::Release);
        }
        loop {
            // Acquire: pairs with the Release store of the last arrival.
            let at = self.release_ns.load(Ordering::Acquire);
            if at != u64::MAX {
                return self.base + Duration::from_nanos(at);
            }
            std::hint::spin_loop();
        }
    }
}

/// How long this thread has waited for a core while ready to run, from the second field of
/// `/proc/thread-self/schedstat` (Linux); `None` elsewhere.
fn run_delay() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = stat.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// This thread's CPU time.
#[cfg(unix)]
pub fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY:
    // - `t` is a valid, writable timespec for the call's duration.
    // - CLOCK_THREAD_CPUTIME_ID is supported by every Unix this suite runs on; a failure is
    //   checked below rather than assumed away.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// No thread CPU clock: every thread counts as off a core, so no chunk passes the test and
/// every multi-thread row says so (kept 0).
#[cfg(not(unix))]
pub fn thread_cpu() -> Duration {
    Duration::ZERO
}
