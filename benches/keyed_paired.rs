//! The keyed ratios measured as pairs: cellrate and governor 0.10's default keyed limiter
//! take turns on the same keys in one process, a chunk of checks each, and every pair of
//! chunks gives one ratio of their times. The figure is the median of those ratios.
//!
//! Why: on this shared VM the time of a check at 1,000,000 keys moves by 2x within minutes, as
//! other tenants load the memory system. Criterion measures one subject for seconds, then the
//! next; the rounds of `benches/report.sh` are minutes apart. Two chunks of one pair run within
//! tens of milliseconds of each other, under the same load, and which of the two runs first
//! alternates from pair to pair. The spread of the pairs' ratios (p25-p75) is printed, so how
//! much the load still moves the ratio can be seen.
//!
//! Rows: u64 keys in random order (the keys, visiting order and limiters of `keyed`'s
//! `keyed_check_*_keys`):
//! - cellrate with the time passed in (`check_key_n_at`, as `cellrate_at_now`), on
//!   `CachedClock`, and at 1,000,000 keys in huge pages, each against governor's `check_key` on
//!   its default clock (a TSC read per check: what a user of governor gets);
//! - cellrate on `CachedClock` against governor on its `QuantaUpkeepClock`: equal clocks, both
//!   a load of a time refreshed every 1 ms;
//! - cellrate with SipHash-1-3 fingerprints (`FingerprintHash::SipHash13`, the hash governor
//!   uses) against governor, and the default AES-CMAC fingerprints against SipHash-1-3;
//! - the floor of a check on SipHash (`keyed_floor`'s `siphash_then_cas64`: the key's SipHash,
//!   then a load and a CAS of the slot it picks) against governor and against cellrate, so
//!   that how far the load moves the floor itself can be seen;
//! - the table in huge pages against the same table in 4 KiB pages (left out where
//!   transparent huge pages are `always` on, since both would be huge).
//!
//! In each turn every row checks its own window of the visiting order, so that no subject
//! meets keys that another row's subject just warmed.
//!
//! Run: `cargo bench -p cellrate-benches -- keyed_paired` (about 45 s); with
//! `KEYED_PAIRED_ROWS="AES-CMAC|1000000 u64 keys, time"`, only the rows whose names contain
//! one of the parts.

use crate::keyed::subjects::{
    cached_clock, cellrate_limiter, governor_cached_limiter, governor_limiter, huge_page_limiter,
    siphash_limiter, u64_workload, SipCasFloor, U64_SEED,
};
use cellrate::{Clock, KeyedLimiter, TickClock};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Checks per chunk: long enough that the two clock reads around it do not count (a chunk
/// takes 2-30 ms), short enough that the load rarely changes within a pair.
const CHUNK: usize = 50_000;

/// How long the rows of one key count take turns.
const BUDGET: Duration = Duration::from_secs(16);

/// A subject's chunk: `check` over the next [`CHUNK`] visits of `order` from `at`, in ns per
/// check. The loop is compiled for each subject with its check inlined, as criterion's loop
/// is; called through a `dyn Fn` per check instead, cellrate's check ran 10-20% slower
/// against governor's than in criterion.
type Chunk<'a> = Box<dyn Fn(&[u64], usize) -> f64 + 'a>;

/// [`Chunk`] of `check`.
fn chunk<'a>(check: impl Fn(&u64) -> bool + 'a) -> Chunk<'a> {
    Box::new(move |order: &[u64], at: usize| {
        let start = Instant::now();
        for i in at..at + CHUNK {
            black_box(check(black_box(&order[i & (order.len() - 1)])));
        }
        start.elapsed().as_nanos() as f64 / CHUNK as f64
    })
}

/// The value at quantile `q` of sorted `values`.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    values[((values.len() - 1) as f64 * q).round() as usize]
}

/// `f` of every pair, sorted.
pub fn sorted_by(pairs: &[(f64, f64)], f: &dyn Fn(&(f64, f64)) -> f64) -> Vec<f64> {
    let mut values: Vec<f64> = pairs.iter().map(f).collect();
    values.sort_by(f64::total_cmp);
    values
}

/// A subject of a pair: its name and its chunk.
type Subject<'a> = (&'a str, &'a Chunk<'a>);

/// A row: two subjects, and the ns per check of each pair's chunks.
struct Row<'a> {
    name: String,
    ours: Subject<'a>,
    theirs: Subject<'a>,
    pairs: Vec<(f64, f64)>,
}

impl<'a> Row<'a> {
    fn new(name: String, ours: Subject<'a>, theirs: Subject<'a>) -> Row<'a> {
        Row {
            name,
            ours,
            theirs,
            pairs: Vec::new(),
        }
    }

    /// One pair of chunks from `at`, `ours` first or second.
    fn pair(&mut self, order: &[u64], at: usize, ours_first: bool) {
        let (ours, theirs) = (self.ours.1, self.theirs.1);
        self.pairs.push(if ours_first {
            let a = ours(order, at);
            (a, theirs(order, at))
        } else {
            let b = theirs(order, at);
            (ours(order, at), b)
        });
    }

    /// The median of the ratios ours/theirs with p25 and p75, and each one's median ns.
    fn print(&self) {
        let sorted = |f: &dyn Fn(&(f64, f64)) -> f64| sorted_by(&self.pairs, f);
        let ratios = sorted(&|&(a, b)| a / b);
        println!(
            "{:<40} {:.2}x (p25 {:.2}, p75 {:.2}; {:>3} pairs)   {} {:>5.1} ns, {} {:>5.1} ns",
            self.name,
            quantile(&ratios, 0.5),
            quantile(&ratios, 0.25),
            quantile(&ratios, 0.75),
            ratios.len(),
            self.ours.0,
            quantile(&sorted(&|&(a, _)| a), 0.5),
            self.theirs.0,
            quantile(&sorted(&|&(_, b)| b), 0.5),
        );
    }
}

/// Warms every subject up with one pass over `order`, then has the rows take turns, one pair
/// each, for [`BUDGET`]: every row samples the whole stretch, so a slow spell of the machine
/// falls on all of them alike.
fn measure(rows: &mut [Row], order: &[u64]) {
    for row in rows.iter() {
        for at in (0..order.len()).step_by(CHUNK) {
            (row.ours.1)(order, at);
            (row.theirs.1)(order, at);
        }
    }
    let started = Instant::now();
    let (mut at, mut turn) = (0, 0);
    while started.elapsed() < BUDGET || turn < 10 {
        for (r, row) in rows.iter_mut().enumerate() {
            let window = (at + r * CHUNK) & (order.len() - 1);
            row.pair(order, window, turn % 2 == 0);
        }
        at = (at + rows.len() * CHUNK) & (order.len() - 1);
        turn += 1;
    }
    rows.iter().for_each(Row::print);
}

/// Whether transparent huge pages are on for every mapping (mode `always`), so that a table
/// not advised to them gets them too.
fn thp_always() -> bool {
    let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
    mode.is_ok_and(|m| m.contains("[always]"))
}

/// Whether the row `name` is to be measured: every row, or with `KEYED_PAIRED_ROWS` set, the
/// rows whose names contain one of its `|`-separated parts (fewer rows, more pairs each).
fn wanted(name: &str) -> bool {
    wanted_by("KEYED_PAIRED_ROWS", name)
}

/// Whether the row `name` is to be measured under the row filter in the variable `var`:
/// every row when it is unset.
pub(crate) fn wanted_by(var: &str, name: &str) -> bool {
    std::env::var(var).map_or(true, |parts| {
        parts.split('|').any(|part| name.contains(part))
    })
}

pub fn main() {
    println!(
        "median of paired ratios of time per check (below 1: the first subject faster), with \
         p25 and p75 of the ratios; chunks of {CHUNK} checks; each subject's median ns per check"
    );
    for n in [1_000, 1_000_000] {
        let (keys, order) = u64_workload(n, U64_SEED);
        let key_refs: Vec<&u64> = keys.iter().collect();
        let theirs = governor_limiter(&keys);
        let theirs_cached = governor_cached_limiter(&keys);
        // The two tables of the huge-page comparison are built one after the other, so that
        // neither gets memory the other's build left behind (the order of builds moved this
        // comparison by 20-30% in trials).
        let ours: KeyedLimiter<u64> = cellrate_limiter(&key_refs, TickClock::new());
        let big = huge_page_limiter(&key_refs);
        let cached: KeyedLimiter<u64, _> = cellrate_limiter(&key_refs, cached_clock());
        let sip = siphash_limiter(&key_refs);
        let floor = SipCasFloor::new(n);

        let (now, huge_now) = (ours.clock().now(), big.clock().now());
        let governor = chunk(|k: &u64| theirs.check_key(k).is_ok());
        let governor_cached = chunk(|k: &u64| theirs_cached.check_key(k).is_ok());
        let at_now = chunk(|k: &u64| ours.check_key_n_at(k, 1, now).is_ok());
        let on_cached = chunk(|k: &u64| cached.check_key(k).is_ok());
        let on_sip = chunk(|k: &u64| sip.check_key_n_at(k, 1, now).is_ok());
        let sip_cas = chunk(|k: &u64| floor.check(k));
        let huge = chunk(|k: &u64| big.check_key_n_at(k, 1, huge_now).is_ok());
        let governor: Subject = ("governor", &governor);
        let (at_now, on_cached) = (("cellrate", &at_now), ("cellrate", &on_cached));
        let (sip_cas, huge): (Subject, Subject) = (("floor", &sip_cas), ("huge pages", &huge));
        let on_sip: Subject = ("SipHash", &on_sip);

        let row =
            |what: &str, ours, theirs| Row::new(format!("{n} u64 keys, {what}"), ours, theirs);
        let mut rows = vec![
            row("time passed in", at_now, governor),
            row("CachedClock", on_cached, governor),
            row(
                "both on 1 ms clocks",
                on_cached,
                ("governor", &governor_cached),
            ),
            row("SipHash fingerprints", on_sip, governor),
            row("AES-CMAC / SipHash", at_now, on_sip),
            row("floor: SipHash + CAS", sip_cas, governor),
            row("time passed in / floor", at_now, sip_cas),
        ];
        if big.huge_pages() {
            rows.push(row("huge pages", huge, governor));
            if !thp_always() {
                rows.push(row("huge / 4 KiB pages", huge, at_now));
            }
        }
        rows.retain(|row| wanted(&row.name));
        if !rows.is_empty() {
            measure(&mut rows, &order);
        }
    }
}
