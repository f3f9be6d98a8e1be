//! `hot_cas`: where the failed compare-and-swaps of one hot limiter come from. Two threads
//! check one limiter (or one bare word), each chunk kept only if the threads overlapped
//! (`overlap.rs`), and per check this suite counts:
//! - **failed CAS**: in the loops it owns. The bare CAS loop (the floor of the `paired` hot
//!   row), the same with crossbeam's `Backoff` after a failure, and a one-word GCRA decision
//!   with cellrate's backoff (`max(TAT, now) + T`, the depth test, the CAS): what a check would
//!   cost with nothing else around the loop. cellrate's and governor's loops have no counter
//!   that a bench can read, so for them this column is empty;
//! - **handoffs**: how often the word changed hands between two checks of one thread, read from
//!   the outcomes themselves. At one fixed `now` each admitted check moves the TAT by exactly
//!   1 ns, so a thread whose `reset_after` (cellrate) or `remaining_burst_capacity` (governor,
//!   on its test clock) moved by more than one since its previous check saw the other thread's
//!   checks land in between: the cache line went to the other core and came back. A failed
//!   CAS needs a handoff between its load and its CAS; a handoff costs a line transfer either
//!   way. On the default clock (`check()` on `TickClock`) the cached time also moves once a
//!   millisecond, which adds at most one false handoff per thread per tick;
//! - **checks per handoff**: how long a core keeps the line;
//! - **the slower thread's share** of the checks: a loop that keeps the line long can starve
//!   the other thread (50%: an even split).
//!
//! A control row runs the bare loop on one thread more than the machine has cores: its threads
//! must take turns, and its chunks must all be dropped.
//!
//! Run: `cargo bench -p cellrate-benches -- hot_cas` (about 15 s).

use crate::core::subjects::{Path, NOW};
use crate::overlap::{run, Run};
use crate::paired::row::{chunk_length, quantile};
use crate::record::{sized, Record};
use cellrate::{Limiter, ManualClock};
use crossbeam_utils::Backoff;
use governor::clock::FakeRelativeClock;
use governor::middleware::StateInformationMiddleware;
use governor::RateLimiter;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// Checks per batch between two readings of the clock.
const BATCH: u64 = 1024;

/// The depth of the GCRA loop's quota (1 ns per token, burst `u32::MAX`, as `Path::Allowed`).
const DEPTH: u64 = u32::MAX as u64;

/// One thread's counts.
#[derive(Default)]
struct Tally {
    failures: u64,
    handoffs: u64,
    /// What this thread last saw or wrote, to find the next check's handoff.
    last: u64,
}

impl Tally {
    /// Counts a handoff unless the word is where this thread's last check left it.
    #[inline(always)]
    fn saw(&mut self, expected: bool, now_last: u64) {
        self.handoffs += u64::from(!expected);
        self.last = now_last;
    }
}

/// One chunk of `op` on `threads` threads: the run and every thread's counts summed.
fn instrumented(threads: usize, op: impl Fn(&mut Tally) + Sync) -> (Run, Tally) {
    let (run, tallies) = run(
        threads,
        chunk_length(2),
        BATCH,
        |_| Tally::default(),
        |tally, _, _| {
            for _ in 0..BATCH {
                op(tally);
            }
        },
    );
    let total = tallies.iter().fold(Tally::default(), |a, t| Tally {
        failures: a.failures + t.failures,
        handoffs: a.handoffs + t.handoffs,
        last: 0,
    });
    (run, total)
}

/// The bare CAS loop; with `backoff`, crossbeam's backoff after each failure.
fn cas_loop(threads: usize, backoff: bool) -> (Run, Tally) {
    let word = AtomicU64::new(0);
    instrumented(threads, |t| {
        // Relaxed: a counter that publishes nothing, as a TAT publishes nothing.
        let mut current = word.load(Relaxed);
        let spin = Backoff::new();
        // Relaxed on both arms: as the load.
        while let Err(actual) = word.compare_exchange_weak(current, current + 1, Relaxed, Relaxed) {
            t.failures += 1;
            if backoff {
                spin.spin();
            }
            current = actual;
        }
        t.saw(current == t.last, current + 1);
    })
}

/// A one-word GCRA spend at a fixed `now` with cellrate's backoff, nothing else in the loop.
fn gcra_loop(threads: usize) -> (Run, Tally) {
    let now = NOW.as_u64();
    let word = AtomicU64::new(now);
    instrumented(threads, |t| {
        // Relaxed: as in `cas_loop`.
        let mut tat = word.load(Relaxed);
        let spin = Backoff::new();
        let new = loop {
            let new = tat.max(now) + 1;
            assert!(new - now <= DEPTH, "the GCRA loop left its allowed path");
            // Relaxed on both arms: as the load.
            match word.compare_exchange_weak(tat, new, Relaxed, Relaxed) {
                Ok(_) => break new,
                Err(actual) => {
                    t.failures += 1;
                    spin.spin();
                    tat = actual;
                }
            }
        };
        t.saw(tat == t.last, new);
    })
}

/// `reset_after` in ns of an admitted check.
#[inline(always)]
fn ahead(outcome: Result<cellrate::Allowed, cellrate::Denied>) -> u64 {
    let allowed = outcome.expect("the hot limiter admits every check");
    allowed.reset_after().as_nanos() as u64
}

/// cellrate with the time passed in, a fresh limiter per chunk.
fn cellrate_at(threads: usize) -> (Run, Tally) {
    let limiter = Limiter::with_clock(Path::Allowed.quota(), ManualClock::new());
    instrumented(threads, |t| {
        let r = ahead(limiter.at(NOW).check_n(1));
        t.saw(r == t.last + 1, r);
    })
}

/// cellrate's `check()` on its default clock.
fn cellrate_check(limiter: &Limiter, threads: usize) -> (Run, Tally) {
    instrumented(threads, |t| {
        let r = ahead(limiter.check());
        t.saw(r == t.last + 1, r);
    })
}

/// governor on its standing-still test clock, with its snapshot middleware (a fresh limiter
/// per chunk): each admitted check lowers `remaining_burst_capacity` by exactly one.
fn governor_fake(threads: usize) -> (Run, Tally) {
    let limiter = RateLimiter::direct_with_clock(
        Path::Allowed.governor_quota(),
        FakeRelativeClock::default(),
    )
    .with_middleware::<StateInformationMiddleware>();
    instrumented(threads, |t| {
        let snapshot = limiter.check().expect("the hot limiter admits every check");
        let left = u64::from(snapshot.remaining_burst_capacity());
        t.saw(left + 1 == t.last, left);
    })
}

/// A subject: its name, whether its failures are counted, and its chunks' results.
struct Subject<'a> {
    name: &'static str,
    counts_failures: bool,
    chunk: Box<dyn Fn() -> (Run, Tally) + 'a>,
    kept: Vec<[f64; 4]>,
    dropped: usize,
}

fn subject<'a>(
    name: &'static str,
    counts_failures: bool,
    chunk: impl Fn() -> (Run, Tally) + 'a,
) -> Subject<'a> {
    Subject {
        name,
        counts_failures,
        chunk: Box::new(chunk),
        kept: Vec::new(),
        dropped: 0,
    }
}

pub fn main() {
    let default_clock = Limiter::new(Path::Allowed.quota());
    let mut subjects = vec![
        subject("bare CAS loop", true, || cas_loop(2, false)),
        subject("bare CAS loop, backoff", true, || cas_loop(2, true)),
        subject("one-word GCRA, backoff", true, || gcra_loop(2)),
        subject("cellrate, time passed in", false, || cellrate_at(2)),
        subject("cellrate, check()", false, || {
            cellrate_check(&default_clock, 2)
        }),
        subject("governor, test clock", false, || governor_fake(2)),
    ];
    let budget = sized(Duration::from_secs(12), Duration::from_millis(1500));
    let started = Instant::now();
    let mut turn = 0;
    while started.elapsed() < budget {
        let n = subjects.len();
        for k in 0..n {
            let s = &mut subjects[(turn + k) % n];
            let (run, tally) = (s.chunk)();
            if !run.overlapped() {
                s.dropped += 1;
                continue;
            }
            let ops = run.ops() as f64;
            let failures = tally.failures as f64 / ops;
            let slower = run.threads.iter().map(|t| t.ops).min().unwrap_or(0) as f64 / ops;
            s.kept.push([
                run.ns_per_op(),
                failures,
                tally.handoffs as f64 / ops,
                slower,
            ]);
        }
        turn += 1;
    }
    println!(
        "2 threads on one word; medians over the kept chunks ({} ms per chunk)",
        chunk_length(2).as_millis()
    );
    for s in &subjects {
        report(s);
    }
    control();
}

fn report(s: &Subject) {
    let median = |i: usize| {
        let mut v: Vec<f64> = s.kept.iter().map(|k| k[i]).collect();
        v.sort_by(f64::total_cmp);
        quantile(&v, 0.5)
    };
    let (ns, failures, handoffs, slower) = (median(0), median(1), median(2), median(3));
    let failures = s.counts_failures.then_some(failures);
    println!(
        "{:<26} {:>7.1} M checks/s  failed CAS/check {:>6}  handoffs/check {:.3}  \
         checks/handoff {:>7.1}  slower thread {:>3.0}%  kept {}, dropped {}",
        s.name,
        1e3 / ns,
        failures.map_or("n/a".into(), |f| format!("{f:.3}")),
        handoffs,
        1.0 / handoffs,
        100.0 * slower,
        s.kept.len(),
        s.dropped
    );
    Record::new("hot_cas", "cas")
        .text("name", s.name)
        .num("threads", 2.0)
        .num("ns", ns)
        .opt("failures", failures)
        .num("handoffs", handoffs)
        .num("slower_share", slower)
        .num("kept", s.kept.len() as f64)
        .num("dropped", s.dropped as f64)
        .write();
}

/// The bare loop on one thread more than there are cores: the test must drop its chunks.
fn control() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunks = sized(20, 5);
    let kept = (0..chunks)
        .filter(|_| cas_loop(cores + 1, false).0.overlapped())
        .count();
    println!(
        "control: {} threads on {cores} cores, kept {kept} of {chunks} chunks (expected 0)",
        cores + 1
    );
    Record::new("hot_cas", "control")
        .num("threads", (cores + 1) as f64)
        .num("cores", cores as f64)
        .num("kept", kept as f64)
        .num("chunks", chunks as f64)
        .write();
}
