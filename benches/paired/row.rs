//! A row of a paired suite: two subjects, and optionally the floor beneath the first, taking
//! turns in one process, one chunk each per turn, which goes first rotating from turn to turn.
//!
//! On a shared machine the load moves absolute times by tens of percent within minutes, while
//! the chunks of one turn run milliseconds apart: each turn gives one ratio, and a row's figure
//! is the median of its turns' ratios, with p25 and p75. A turn counts only if every chunk of
//! it passed the overlap test of [`overlap`](crate::overlap) (its threads all on a core
//! together); the others are dropped and counted. Rows take turns too, so a slow spell falls
//! on all of them alike.

use crate::overlap::Run;
use crate::record::{sized, Record};
use std::time::{Duration, Instant};

/// A subject's chunk: one run of its work, on its threads.
pub(crate) type Chunk<'a> = Box<dyn FnMut() -> Run + 'a>;

/// One side of a row.
pub(crate) struct Subject<'a> {
    pub name: &'static str,
    pub threads: usize,
    pub chunk: Chunk<'a>,
    /// Whether its threads sleep by design (a lock): its chunks are then judged by
    /// [`Run::overlapped_or_asleep`].
    pub sleeps: bool,
}

impl Subject<'_> {
    /// This subject, marked as one whose threads sleep on a lock by design.
    pub fn sleeping(self) -> Self {
        Subject {
            sleeps: true,
            ..self
        }
    }
}

/// What a row's ratios are of.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Time per operation, ours / theirs (below 1: ours faster); a bound is a most.
    Time,
    /// Operations per second over all threads, ours / theirs (above 1: ours faster); a bound
    /// is a least.
    Rate,
}

/// A row: its subjects ([ours, theirs] or [ours, theirs, floor]) and the ns per operation of
/// each subject in each turn that counted.
pub(crate) struct Row<'a> {
    pub name: String,
    unit: Unit,
    bound: Option<f64>,
    floor_bound: Option<f64>,
    subjects: Vec<Subject<'a>>,
    turns: Vec<Vec<f64>>,
    /// The slower thread's share of each subject's operations, per kept turn.
    slower: Vec<Vec<f64>>,
    on_core: Vec<f64>,
    dropped: usize,
}

impl<'a> Row<'a> {
    /// A row of time ratios.
    pub fn time(name: impl Into<String>, ours: Subject<'a>, theirs: Subject<'a>) -> Row<'a> {
        Row::new(name.into(), Unit::Time, ours, theirs)
    }

    /// A row of rate ratios.
    pub fn rate(name: impl Into<String>, ours: Subject<'a>, theirs: Subject<'a>) -> Row<'a> {
        Row::new(name.into(), Unit::Rate, ours, theirs)
    }

    fn new(name: String, unit: Unit, ours: Subject<'a>, theirs: Subject<'a>) -> Row<'a> {
        Row {
            name,
            unit,
            bound: None,
            floor_bound: None,
            subjects: vec![ours, theirs],
            turns: Vec::new(),
            slower: Vec::new(),
            on_core: Vec::new(),
            dropped: 0,
        }
    }

    /// The bound of ours / theirs: a most for time, a least for rate.
    pub fn bound(mut self, bound: f64) -> Row<'a> {
        self.bound = Some(bound);
        self
    }

    /// The floor beneath ours, measured in the same turns.
    pub fn floor(mut self, floor: Subject<'a>) -> Row<'a> {
        assert_eq!(self.subjects.len(), 2, "one floor per row");
        self.subjects.push(floor);
        self
    }

    /// The bound of ours / floor, in the row's unit.
    pub fn floor_bound(mut self, bound: f64) -> Row<'a> {
        self.floor_bound = Some(bound);
        self
    }

    /// One turn, subject `first` first; kept only if every chunk overlapped.
    fn turn(&mut self, first: usize) {
        let n = self.subjects.len();
        let mut ns = vec![0.0; n];
        let mut slower = vec![0.0; n];
        let mut kept = true;
        let mut on_core = 1.0f64;
        for k in 0..n {
            let s = (first + k) % n;
            let run = (self.subjects[s].chunk)();
            kept &= if self.subjects[s].sleeps {
                run.overlapped_or_asleep()
            } else {
                run.overlapped()
            };
            on_core = on_core.min(run.on_core());
            ns[s] = run.ns_per_op();
            slower[s] = run.slower_share();
        }
        if kept {
            self.turns.push(ns);
            self.slower.push(slower);
            self.on_core.push(on_core);
        } else {
            self.dropped += 1;
        }
    }

    /// The ratio of subject `a` to subject `b` in the row's unit, per kept turn, sorted.
    fn ratios(&self, a: usize, b: usize) -> Vec<f64> {
        let mut r: Vec<f64> = self
            .turns
            .iter()
            .map(|ns| match self.unit {
                Unit::Time => ns[a] / ns[b],
                Unit::Rate => ns[b] / ns[a],
            })
            .collect();
        r.sort_by(f64::total_cmp);
        r
    }

    fn median_ns(&self, s: usize) -> f64 {
        median(self.turns.iter().map(|ns| ns[s]))
    }

    /// The median share of subject `s`'s slower thread (NaN on one thread).
    fn median_slower(&self, s: usize) -> f64 {
        if self.subjects[s].threads == 1 {
            return f64::NAN;
        }
        median(self.slower.iter().map(|v| v[s]))
    }

    /// Whether the median `ratio` meets `bound`; `None` without a bound or with fewer than
    /// [`min_kept`] kept turns (a median of a few turns is no measurement).
    fn met(&self, ratio: f64, bound: Option<f64>) -> Option<bool> {
        if self.turns.len() < min_kept() {
            return None;
        }
        bound.map(|b| match self.unit {
            Unit::Time => ratio <= b,
            Unit::Rate => ratio >= b,
        })
    }

    /// Prints the row and writes its record for `suite`.
    fn report(&self, suite: &str) {
        let unit = match self.unit {
            Unit::Time => "time",
            Unit::Rate => "rate",
        };
        let kept = self.turns.len();
        let q = |v: &[f64]| [0.25, 0.5, 0.75].map(|p| quantile(v, p));
        let ratio = q(&self.ratios(0, 1));
        let floor = (self.subjects.len() == 3).then(|| q(&self.ratios(0, 2)));
        let theirs_floor = (self.subjects.len() == 3).then(|| q(&self.ratios(1, 2)));
        let ns: Vec<f64> = (0..self.subjects.len())
            .map(|s| self.median_ns(s))
            .collect();
        let mut on_core = self.on_core.clone();
        on_core.sort_by(f64::total_cmp);
        let verdict = |met: Option<bool>| match met {
            Some(true) => " met",
            Some(false) => " MISSED",
            None if self.bound.is_some() && kept < min_kept() => " (too few turns kept)",
            None => "",
        };
        let met = self.met(ratio[1], self.bound);
        let floor_met = floor.and_then(|f| self.met(f[1], self.floor_bound));
        let mut line = format!(
            "{:<56} {unit} {:.2}x (p25 {:.2}, p75 {:.2}){}",
            self.name,
            ratio[1],
            ratio[0],
            ratio[2],
            verdict(met)
        );
        if let Some(f) = floor {
            line += &format!(" | / floor {:.2}x{}", f[1], verdict(floor_met));
        }
        line += &format!(" | kept {kept}, dropped {} |", self.dropped);
        let slower: Vec<f64> = (0..self.subjects.len())
            .map(|s| self.median_slower(s))
            .collect();
        for (s, subject) in self.subjects.iter().enumerate() {
            line += &format!(" {} {:.2} ns", subject.name, ns[s]);
            if subject.threads > 1 {
                line += &format!(" (slower thread {:.0}%)", 100.0 * slower[s]);
            }
        }
        println!("{line}");
        let names: Vec<&str> = self.subjects.iter().map(|s| s.name).collect();
        let threads: Vec<f64> = self.subjects.iter().map(|s| s.threads as f64).collect();
        let chunk_ms: Vec<f64> = self
            .subjects
            .iter()
            .map(|s| chunk_length(s.threads).as_secs_f64() * 1e3)
            .collect();
        Record::new(suite, "row")
            .text("name", &self.name)
            .text("unit", unit)
            .texts("subjects", &names)
            .nums("threads", &threads)
            .nums("chunk_ms", &chunk_ms)
            .nums("ns", &ns)
            .nums("slower_share", &slower)
            .nums("ratio", &ratio)
            .opt("bound", self.bound)
            .opt("met", met.map(f64::from))
            .nums("floor_ratio", &floor.unwrap_or([f64::NAN; 3]))
            .nums("theirs_floor_ratio", &theirs_floor.unwrap_or([f64::NAN; 3]))
            .opt("floor_bound", self.floor_bound)
            .opt("floor_met", floor_met.map(f64::from))
            .num("kept", kept as f64)
            .num("dropped", self.dropped as f64)
            .num("on_core_p50", quantile(&on_core, 0.5))
            .num("on_core_min", on_core.first().copied().unwrap_or(f64::NAN))
            .write();
    }
}

/// The fewest kept turns whose median a row's verdict is drawn from.
pub(crate) fn min_kept() -> usize {
    sized(10, 2)
}

/// How long a chunk of `threads` threads runs: a few ms on one thread, at least 10 ms on
/// several (far longer than waking a thread, so that the threads really run together).
pub(crate) fn chunk_length(threads: usize) -> Duration {
    match threads {
        1 => sized(Duration::from_millis(2), Duration::from_micros(500)),
        _ => sized(Duration::from_millis(10), Duration::from_millis(3)),
    }
}

/// The median of `values`.
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    quantile(&v, 0.5)
}

/// The value at quantile `q` of sorted `values` (NaN if there are none).
pub(crate) fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values[((values.len() - 1) as f64 * q).round() as usize]
}

/// Whether the row `name` is to be measured under the row filter in the variable `var`
/// (`|`-separated parts, any of which the name contains): every row when it is unset.
pub(crate) fn wanted_by(var: &str, name: &str) -> bool {
    std::env::var(var).map_or(true, |parts| {
        parts.split('|').any(|part| name.contains(part))
    })
}

/// Warms every subject with two chunks, then has the rows take turns for `budget` (longer, up
/// to twice as long, while some row has fewer than [`min_kept`] kept turns), then prints and
/// records every row for `suite`.
pub(crate) fn measure(suite: &str, rows: &mut [Row], budget: Duration) {
    for row in rows.iter_mut() {
        for subject in row.subjects.iter_mut() {
            for _ in 0..2 {
                (subject.chunk)();
            }
        }
    }
    let budget = sized(budget, budget / 8);
    let enough = min_kept();
    let started = Instant::now();
    let mut turn = 0;
    loop {
        let elapsed = started.elapsed();
        let short = rows.iter().any(|r| r.turns.len() < enough);
        if (elapsed >= budget && !short) || elapsed >= 2 * budget {
            break;
        }
        for row in rows.iter_mut() {
            let first = turn % row.subjects.len();
            row.turn(first);
        }
        turn += 1;
    }
    for row in rows.iter() {
        row.report(suite);
    }
}
