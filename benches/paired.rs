//! `paired`: the headline rows, each library as a user calls it, on its default clock
//! (cellrate's `TickClock`, governor's quanta TSC read, the mutex bucket's `Instant`), and the
//! rows with the time passed in against the bare atomics beneath them. The keyed rows use
//! `KeyedLimiter::new` (a table sized for `DEFAULT_MAX_KEYS`, so 1,000 keys sit at their home
//! slots) and governor's `RateLimiter::keyed`; the `table full` row is cellrate's table sized
//! for exactly its 1,000 keys (80% full, as the `keyed` and `keyed_paired` rows are). Beneath
//! the keyed rows, their floor: a SipHash-1-3 and one load and CAS of a random slot of an array
//! as large as the default table, at both key counts.
//!
//! Each row is two subjects taking turns in one process: a chunk of checks each, which of the
//! two goes first alternating, and one ratio per pair of chunks. The figure is the median of
//! those ratios, with p25 and p75: on a shared machine the load moves absolute times by tens of
//! percent within minutes, while the two chunks of a pair run milliseconds apart. Rows take
//! turns too, so a slow spell falls on all of them alike.
//!
//! Ratios are of time per check (below 1: cellrate faster), except the rows marked `rate`,
//! which are of checks per second over both threads (above 1: cellrate's side faster). Each
//! row prints the bound it is held to and whether its median meets it.
//!
//! Run: `cargo bench -p cellrate-benches -- paired` (about 40 s).

use crate::core::contention::on_threads;
use crate::core::subjects::{
    count_allowed, CellrateAt, CellrateClock, FloorCas, GovernorClock, GovernorFake, MutexClock,
    Path, Spend,
};
use crate::keyed::subjects::{
    cellrate_limiter, default_limiter, governor_limiter, u64_workload, SipCasFloor, U64_SEED,
};
use crate::keyed_paired::{quantile, sorted_by, wanted_by};
use cellrate::TickClock;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Checks per chunk and thread: a chunk takes 0.2-15 ms.
const CHUNK: u64 = 50_000;

/// How long the rows take turns.
const BUDGET: Duration = Duration::from_secs(24);

/// A subject's chunk: runs [`CHUNK`] checks per thread, returns ns per check (wall time over
/// all threads' checks).
pub(crate) type Chunk<'a> = Box<dyn FnMut() -> f64 + 'a>;

/// What a row's median ratio is held to.
#[derive(Clone, Copy)]
pub(crate) enum Bound {
    /// Time per check, ours / theirs, at most this.
    TimeAtMost(f64),
    /// Checks per second, ours / theirs, at least this.
    RateAtLeast(f64),
}

/// A row: two subjects and the ns per check of each pair's chunks.
pub(crate) struct Row<'a> {
    name: &'static str,
    bound: Bound,
    ours: (&'static str, Chunk<'a>),
    theirs: (&'static str, Chunk<'a>),
    pairs: Vec<(f64, f64)>,
}

impl<'a> Row<'a> {
    pub(crate) fn new(
        name: &'static str,
        bound: Bound,
        ours: (&'static str, Chunk<'a>),
        theirs: (&'static str, Chunk<'a>),
    ) -> Row<'a> {
        Row {
            name,
            bound,
            ours,
            theirs,
            pairs: Vec::new(),
        }
    }

    fn pair(&mut self, ours_first: bool) {
        let pair = if ours_first {
            let a = (self.ours.1)();
            (a, (self.theirs.1)())
        } else {
            let b = (self.theirs.1)();
            ((self.ours.1)(), b)
        };
        self.pairs.push(pair);
    }

    fn print(&self) {
        let sorted = |f: &dyn Fn(&(f64, f64)) -> f64| sorted_by(&self.pairs, f);
        let (ratios, unit, bound, met) = match self.bound {
            Bound::TimeAtMost(b) => {
                let r = sorted(&|&(a, b)| a / b);
                let met = quantile(&r, 0.5) <= b;
                (r, "time", format!("<= {b:.2}x"), met)
            }
            Bound::RateAtLeast(b) => {
                let r = sorted(&|&(a, b)| b / a);
                let met = quantile(&r, 0.5) >= b;
                (r, "rate", format!(">= {b:.2}x"), met)
            }
        };
        let ns = |f: &dyn Fn(&(f64, f64)) -> f64| quantile(&sorted(f), 0.5);
        println!(
            "{:<44} {unit} {:.2}x (p25 {:.2}, p75 {:.2}; {:>3} pairs) bound {bound}: {}   {} {:.2} ns, {} {:.2} ns",
            self.name,
            quantile(&ratios, 0.5),
            quantile(&ratios, 0.25),
            quantile(&ratios, 0.75),
            ratios.len(),
            if met { "met" } else { "MISSED" },
            self.ours.0,
            ns(&|&(a, _)| a),
            self.theirs.0,
            ns(&|&(_, b)| b),
        );
    }
}

/// A chunk of `subject`'s checks on `threads` threads, each asserting that every check took
/// `path`.
pub(crate) fn spends<'a, S: Spend>(subject: &'a S, path: Path, threads: usize) -> Chunk<'a> {
    Box::new(move || {
        ns_per_check(threads, |_| {
            let allowed = count_allowed(subject, CHUNK);
            path.assert_outcomes(allowed, CHUNK);
        })
    })
}

/// A chunk of keyed checks on `threads` threads, each walking `order` from its own place
/// (which moves on chunk by chunk), each check allowed.
fn walks<'a>(
    order: &'a [u64],
    threads: usize,
    check: impl Fn(&u64) -> bool + Sync + 'a,
) -> Chunk<'a> {
    let mut at = 0usize;
    Box::new(move || {
        let start = at;
        at = at.wrapping_add(CHUNK as usize * threads);
        ns_per_check(threads, |t| {
            let from = start + t * CHUNK as usize;
            let mut allowed = 0u64;
            for i in from..from + CHUNK as usize {
                allowed += u64::from(check(black_box(&order[i & (order.len() - 1)])));
            }
            assert_eq!(allowed, CHUNK, "a keyed check was denied");
        })
    })
}

/// ns per check of [`CHUNK`] checks on each of `threads` threads running `work(thread index)`.
fn ns_per_check(threads: usize, work: impl Fn(usize) + Sync) -> f64 {
    let (wall, _) = on_threads(threads, work);
    wall.as_nanos() as f64 / (CHUNK as f64 * threads as f64)
}

/// Warms every subject with a few chunks, then has the rows take turns for [`BUDGET`].
pub(crate) fn measure(rows: &mut [Row]) {
    for row in rows.iter_mut() {
        for _ in 0..3 {
            (row.ours.1)();
            (row.theirs.1)();
        }
    }
    let started = Instant::now();
    let mut turn = 0;
    while started.elapsed() < BUDGET || turn < 10 {
        for row in rows.iter_mut() {
            row.pair(turn % 2 == 0);
        }
        turn += 1;
    }
    rows.iter().for_each(Row::print);
}

pub fn main() {
    println!(
        "paired ratios, median with p25 and p75 of the pairs' ratios; chunks of {CHUNK} checks \
         per thread; each subject's median ns per check (over all its threads)"
    );
    let allowed = Path::Allowed;
    let (ours, theirs) = (CellrateClock::new(allowed), GovernorClock::new(allowed));
    let (ours_2, theirs_2) = (CellrateClock::new(allowed), GovernorClock::new(allowed));
    let (ours_1, mutex_2) = (CellrateClock::new(allowed), MutexClock::new(allowed));
    let (at, cas) = (CellrateAt::new(allowed), FloorCas::new());
    let denied = Path::Denied;
    let (at_denied, governor_denied) = (CellrateAt::new(denied), GovernorFake::new(denied));

    let (keys_k, order_k) = u64_workload(1_000, U64_SEED);
    let (keys_m, order_m) = u64_workload(1_000_000, U64_SEED);
    let (refs_k, refs_m): (Vec<&u64>, Vec<&u64>) =
        (keys_k.iter().collect(), keys_m.iter().collect());
    let (ours_k, ours_m) = (default_limiter(&refs_k), default_limiter(&refs_m));
    let full_k = cellrate_limiter::<u64, _, _>(&refs_k, TickClock::new());
    let floor = SipCasFloor::for_default_table();
    let floor_check = |k: &u64| floor.check(k);
    let (theirs_k, theirs_m) = (governor_limiter(&keys_k), governor_limiter(&keys_m));
    let ours_k_check = |k: &u64| ours_k.check_key(k).is_ok();
    let ours_m_check = |k: &u64| ours_m.check_key(k).is_ok();
    let full_k_check = |k: &u64| full_k.check_key(k).is_ok();
    let theirs_k_check = |k: &u64| theirs_k.check_key(k).is_ok();
    let theirs_m_check = |k: &u64| theirs_m.check_key(k).is_ok();

    use Bound::{RateAtLeast, TimeAtMost};
    let mut rows = vec![
        Row::new(
            "check(), allowed / governor",
            TimeAtMost(0.8),
            ("cellrate", spends(&ours, allowed, 1)),
            ("governor", spends(&theirs, allowed, 1)),
        ),
        Row::new(
            "check_key, 1,000 u64 keys / governor",
            TimeAtMost(0.6),
            ("cellrate", walks(&order_k, 1, ours_k_check)),
            ("governor", walks(&order_k, 1, theirs_k_check)),
        ),
        Row::new(
            "check_key, 1,000 keys, table full / governor",
            TimeAtMost(0.6),
            ("cellrate", walks(&order_k, 1, full_k_check)),
            ("governor", walks(&order_k, 1, theirs_k_check)),
        ),
        Row::new(
            "check_key, 1,000,000 u64 keys / governor",
            TimeAtMost(0.3),
            ("cellrate", walks(&order_m, 1, ours_m_check)),
            ("governor", walks(&order_m, 1, theirs_m_check)),
        ),
        // The floor beneath the two keyed rows: a SipHash-1-3 of the key, then one load and
        // CAS of a random slot of an array as large as the default table; no tag, no search,
        // no decision, no clock. Bound as the rows it is beneath.
        Row::new(
            "floor: SipHash + CAS, 1,000 keys / governor",
            TimeAtMost(0.6),
            ("floor", walks(&order_k, 1, floor_check)),
            ("governor", walks(&order_k, 1, theirs_k_check)),
        ),
        Row::new(
            "floor: SipHash + CAS, 1,000,000 keys / gov.",
            TimeAtMost(0.3),
            ("floor", walks(&order_m, 1, floor_check)),
            ("governor", walks(&order_m, 1, theirs_m_check)),
        ),
        Row::new(
            "one hot limiter, 2 threads / governor",
            RateAtLeast(1.5),
            ("cellrate", spends(&ours_2, allowed, 2)),
            ("governor", spends(&theirs_2, allowed, 2)),
        ),
        Row::new(
            "one hot limiter, 2 threads / mutex bucket",
            RateAtLeast(3.0),
            ("cellrate", spends(&ours_2, allowed, 2)),
            ("mutex", spends(&mutex_2, allowed, 2)),
        ),
        Row::new(
            "one hot limiter, 2 threads / 1 thread",
            RateAtLeast(0.8),
            ("2 threads", spends(&ours_2, allowed, 2)),
            ("1 thread", spends(&ours_1, allowed, 1)),
        ),
        Row::new(
            "check_key, 1,000,000 keys, 2 threads / 1",
            RateAtLeast(1.6),
            ("2 threads", walks(&order_m, 2, ours_m_check)),
            ("1 thread", walks(&order_m, 1, ours_m_check)),
        ),
        Row::new(
            "floor, 1,000,000 keys, 2 threads / 1",
            RateAtLeast(1.6),
            ("2 threads", walks(&order_m, 2, floor_check)),
            ("1 thread", walks(&order_m, 1, floor_check)),
        ),
        Row::new(
            "time passed in, allowed / bare CAS",
            TimeAtMost(1.3),
            ("cellrate", spends(&at, allowed, 1)),
            ("CAS", spends(&cas, allowed, 1)),
        ),
        Row::new(
            "time passed in, denied / governor",
            TimeAtMost(1.0),
            ("cellrate", spends(&at_denied, denied, 1)),
            ("governor", spends(&governor_denied, denied, 1)),
        ),
    ];
    // PAIRED_ROWS="1,000,000|hot": only the rows whose names contain one of the parts.
    rows.retain(|row| wanted_by("PAIRED_ROWS", row.name));
    measure(&mut rows);
}
