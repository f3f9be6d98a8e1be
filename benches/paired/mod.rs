//! `paired`: the headline rows, each library as a user calls it, on its default clock
//! (cellrate's `TickClock`, governor's quanta TSC read, the mutex bucket's `Instant`), the rows
//! with the time passed in, and beside each the bare floor beneath it.
//!
//! - Single-thread rows, allowed: "verdict" rows use `is_ok()` alone; "outcome read" rows read
//!   what a user who writes headers reads (cellrate's `remaining()` and `reset_after()`,
//!   governor's snapshot and `remaining_burst_capacity()`: `core/read.rs`).
//! - Keyed rows: `KeyedLimiter::new` (a table sized for `DEFAULT_MAX_KEYS`, so 1,000 keys sit
//!   at their home slots) and governor's `RateLimiter::keyed`; `table full` is cellrate's table
//!   sized for exactly its 1,000 keys (80% full). Their floor: a SipHash-1-3 and one load and
//!   CAS of a random slot of an array as large as the table.
//! - Multi-thread rows: threads released together on one limiter (or one keyed table), each
//!   chunk at least 10 ms per thread and kept only if its threads provably overlapped
//!   (`overlap.rs`); their floor is the bare CAS loop (or load, or SipHash + CAS) on as many
//!   threads, and each 2-thread subject also reports the share of its checks that its slower
//!   thread made: a loop that backs off after a failed CAS lets one core keep the line, which
//!   raises the rate and starves the other thread (`hot_cas` measures how).
//!
//! Rows: two subjects and the floor take turns (`row.rs`); ratios are of time per check (below
//! 1: cellrate faster), or for `rate` rows of checks per second over all threads (above 1:
//! cellrate's side faster). Each row prints its bounds and whether its median meets them.
//!
//! Run: `cargo bench -p cellrate-benches -- paired` (about a minute); `PAIRED_ROWS="hot|1,000,"`
//! runs only the rows whose names contain one of the parts; `BENCH_QUICK=1` smoke-tests them.

pub(crate) mod chunks;
pub(crate) mod row;

use crate::core::read::{
    read, read_governor, CellrateAtRead, CellrateRead, GovernorFakeRead, GovernorRead,
};
use crate::core::subjects::{
    CellrateAt, CellrateClock, FloorCas, FloorCasBackoff, FloorLoad, GovernorClock, GovernorFake,
    MutexClock, Path,
};
use crate::keyed::subjects::{
    cached_clock, cellrate_limiter, default_limiter, governor_cached_limiter, governor_limiter,
    governor_read_limiter, u64_workload, SipCasFloor, U64_SEED,
};
use cellrate::{KeyedLimiter, TickClock};
use chunks::{spends, walks};
use row::{measure, wanted_by, Row};
use std::time::Duration;

/// How long the rows take turns.
const BUDGET: Duration = Duration::from_secs(40);

pub fn main() {
    println!(
        "paired ratios: median with p25 and p75 of the kept turns' ratios; a turn is kept only \
         if every chunk's threads overlapped; each subject's median ns per check (over all its \
         threads)"
    );
    let (allowed, denied) = (Path::Allowed, Path::Denied);
    let (ours, theirs) = (CellrateClock::new(allowed), GovernorClock::new(allowed));
    let (ours_read, theirs_read) = (CellrateRead::new(allowed), GovernorRead::new(allowed));
    let (at, fake) = (CellrateAt::new(allowed), GovernorFake::new(allowed));
    let (at_read, fake_read) = (CellrateAtRead::new(allowed), GovernorFakeRead::new(allowed));
    let (at_denied, fake_denied) = (CellrateAt::new(denied), GovernorFake::new(denied));
    let (cas, load) = (FloorCas::new(), FloorLoad::new());
    let (ours_2, theirs_2, mutex_2) = (
        CellrateClock::new(allowed),
        GovernorClock::new(allowed),
        MutexClock::new(allowed),
    );
    let (ours_1, cas_2, cas_1) = (
        CellrateClock::new(allowed),
        FloorCas::new(),
        FloorCas::new(),
    );
    let cas_backoff_2 = FloorCasBackoff::new();
    let (ours_denied_2, theirs_denied_2) = (CellrateClock::new(denied), GovernorClock::new(denied));

    let (keys_k, order_k) = u64_workload(1_000, U64_SEED);
    let (keys_m, order_m) = u64_workload(1_000_000, U64_SEED);
    let (refs_k, refs_m): (Vec<&u64>, Vec<&u64>) =
        (keys_k.iter().collect(), keys_m.iter().collect());
    let (ours_k, ours_m) = (default_limiter(&refs_k), default_limiter(&refs_m));
    let full_k = cellrate_limiter::<u64, _, _>(&refs_k, TickClock::new());
    let cached_m: KeyedLimiter<u64, _> = cellrate_limiter(&refs_m, cached_clock());
    let (floor, floor_k) = (SipCasFloor::for_default_table(), SipCasFloor::new(1_000));
    let (theirs_k, theirs_m) = (governor_limiter(&keys_k), governor_limiter(&keys_m));
    let theirs_k_read = governor_read_limiter(&keys_k);
    let theirs_cached_m = governor_cached_limiter(&keys_m);
    let floor_check = |k: &u64| floor.check(k);
    let ours_k_check = |k: &u64| ours_k.check_key(k).is_ok();
    let ours_m_check = |k: &u64| ours_m.check_key(k).is_ok();
    let theirs_k_check = |k: &u64| theirs_k.check_key(k).is_ok();
    let theirs_m_check = |k: &u64| theirs_m.check_key(k).is_ok();

    let mut rows = vec![
        Row::time(
            "check(), allowed, verdict / governor",
            spends("cellrate", &ours, allowed, 1),
            spends("governor", &theirs, allowed, 1),
        )
        .bound(0.8)
        .floor(spends("bare CAS", &cas, allowed, 1)),
        Row::time(
            "check(), allowed, outcome read / governor",
            spends("cellrate", &ours_read, allowed, 1),
            spends("governor", &theirs_read, allowed, 1),
        )
        .bound(0.8)
        .floor(spends("bare CAS", &cas, allowed, 1)),
        Row::time(
            "check(), allowed, outcome read / verdict",
            spends("read", &ours_read, allowed, 1),
            spends("verdict", &ours, allowed, 1),
        ),
        Row::time(
            "time passed in, allowed, verdict / governor",
            spends("cellrate", &at, allowed, 1),
            spends("governor", &fake, allowed, 1),
        )
        .floor(spends("bare CAS", &cas, allowed, 1))
        .floor_bound(1.3),
        Row::time(
            "time passed in, allowed, outcome read / governor",
            spends("cellrate", &at_read, allowed, 1),
            spends("governor", &fake_read, allowed, 1),
        )
        .floor(spends("bare CAS", &cas, allowed, 1)),
        Row::time(
            "time passed in, denied / governor",
            spends("cellrate", &at_denied, denied, 1),
            spends("governor", &fake_denied, denied, 1),
        )
        .bound(1.0)
        .floor(spends("bare load", &load, denied, 1)),
        Row::time(
            "check_key, 1,000 u64 keys, verdict / governor",
            walks("cellrate", &order_k, 1_000, 1, ours_k_check),
            walks("governor", &order_k, 1_000, 1, theirs_k_check),
        )
        .bound(0.6)
        .floor(walks("SipHash + CAS", &order_k, 1_000, 1, floor_check)),
        Row::time(
            "check_key, 1,000 u64 keys, outcome read / governor",
            walks("cellrate", &order_k, 1_000, 1, |k| {
                read(ours_k.check_key(k))
            }),
            walks("governor", &order_k, 1_000, 1, |k| {
                read_governor(theirs_k_read.check_key(k))
            }),
        )
        .bound(0.6)
        .floor(walks("SipHash + CAS", &order_k, 1_000, 1, floor_check)),
        Row::time(
            "check_key, 1,000 keys, table full / governor",
            walks("cellrate", &order_k, 1_000, 1, |k| {
                full_k.check_key(k).is_ok()
            }),
            walks("governor", &order_k, 1_000, 1, theirs_k_check),
        )
        .floor(walks("SipHash + CAS", &order_k, 1_000, 1, |k| {
            floor_k.check(k)
        })),
        Row::time(
            "check_key, 1,000,000 u64 keys / governor",
            walks("cellrate", &order_m, 1_000_000, 1, ours_m_check),
            walks("governor", &order_m, 1_000_000, 1, theirs_m_check),
        )
        .bound(0.3)
        .floor(walks("SipHash + CAS", &order_m, 1_000_000, 1, floor_check)),
        Row::rate(
            "one hot limiter, 2 threads / governor, 2 threads",
            spends("cellrate", &ours_2, allowed, 2),
            spends("governor", &theirs_2, allowed, 2),
        )
        .bound(1.2)
        .floor(spends("bare CAS", &cas_2, allowed, 2))
        .floor_bound(0.7),
        Row::rate(
            "one hot limiter, 2 threads / CAS loop with backoff, 2 threads",
            spends("cellrate", &ours_2, allowed, 2),
            spends("CAS + backoff", &cas_backoff_2, allowed, 2),
        )
        .floor(spends("bare CAS", &cas_2, allowed, 2)),
        Row::rate(
            "one hot limiter, 2 threads / mutex bucket, 2 threads",
            spends("cellrate", &ours_2, allowed, 2),
            spends("mutex", &mutex_2, allowed, 2).sleeping(),
        )
        .bound(3.0)
        .floor(spends("bare CAS", &cas_2, allowed, 2)),
        Row::rate(
            "one hot limiter, 2 threads / 1 thread",
            spends("2 threads", &ours_2, allowed, 2),
            spends("1 thread", &ours_1, allowed, 1),
        )
        .floor(spends("bare CAS", &cas_2, allowed, 2)),
        Row::rate(
            "bare CAS loop, 2 threads / 1 thread",
            spends("2 threads", &cas_2, allowed, 2),
            spends("1 thread", &cas_1, allowed, 1),
        ),
        Row::rate(
            "one hot limiter, denied, 2 threads / governor, 2 threads",
            spends("cellrate", &ours_denied_2, denied, 2),
            spends("governor", &theirs_denied_2, denied, 2),
        )
        .floor(spends("bare load", &load, denied, 2)),
        Row::rate(
            "check_key, 1,000,000 keys, 2 threads / governor, 2 threads",
            walks("cellrate", &order_m, 1_000_000, 2, ours_m_check),
            walks("governor", &order_m, 1_000_000, 2, theirs_m_check),
        )
        .floor(walks("SipHash + CAS", &order_m, 1_000_000, 2, floor_check)),
        Row::rate(
            "check_key, 1,000,000 keys, both on 1 ms clocks, 2 threads",
            walks("cellrate", &order_m, 1_000_000, 2, |k| {
                cached_m.check_key(k).is_ok()
            }),
            walks("governor", &order_m, 1_000_000, 2, |k| {
                theirs_cached_m.check_key(k).is_ok()
            }),
        )
        .floor(walks("SipHash + CAS", &order_m, 1_000_000, 2, floor_check)),
        Row::rate(
            "check_key, 1,000,000 keys, 2 threads / 1 thread",
            walks("2 threads", &order_m, 1_000_000, 2, ours_m_check),
            walks("1 thread", &order_m, 1_000_000, 1, ours_m_check),
        )
        .bound(1.6)
        .floor(walks("SipHash + CAS", &order_m, 1_000_000, 2, floor_check)),
        Row::rate(
            "floor: SipHash + CAS, 1,000,000 keys, 2 threads / 1 thread",
            walks("2 threads", &order_m, 1_000_000, 2, floor_check),
            walks("1 thread", &order_m, 1_000_000, 1, floor_check),
        ),
    ];
    rows.retain(|row| wanted_by("PAIRED_ROWS", &row.name));
    measure("paired", &mut rows, BUDGET);
}
