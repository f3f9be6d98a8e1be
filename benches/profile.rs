//! `profile`: one subject's checks in a loop, for instruction counts and profiles (which
//! depend on no load), not for timing. The loop is the function `profiled_count`, so that
//! callgrind can count it alone (`benches/report.sh` does, for the tables of BENCHMARKS.md):
//!
//! ```text
//! cargo bench -p cellrate-benches --no-run
//! valgrind --tool=callgrind --toggle-collect='*profiled_count*' \
//!     target/release/deps/compare-* profile new 1000 1000000
//! ```
//!
//! Arguments: the subject, the number of u64 keys (keyed subjects only), and the number of
//! checks. Keyed subjects: `default` (`check_key` on `TickClock`, the table sized for the
//! keys), `new` (`check_key` of `KeyedLimiter::new`, the default table), `at`
//! (`at(now).key(k).check_n(1)`), `siphash_at` (the same with SipHash-1-3 fingerprints), `floor` (the
//! SipHash + CAS floor), `governor` (governor's default `check_key`). One limiter, time passed
//! in unless named otherwise: `limiter_at`, `limiter_at_read` (outcome read), `limiter_at_denied`,
//! `limiter_at_changed` and `limiter_at_denied_changed` (after one quota change),
//! `limiter_at_named` (counted), `limiter_check` and `limiter_check_read` (`check()` on
//! `TickClock`), `governor_check` and `governor_check_read` (its default clock), `floor_cas`.
//! The instruction count of the loop is per check; the set-up is outside it.

use crate::core::read::{read, CellrateRead, GovernorRead};
use crate::core::subjects::{CellrateClock, FloorCas, GovernorClock, Path, Spend, NOW};
use crate::keyed::subjects::{
    cellrate_limiter, default_limiter, governor_limiter, siphash_limiter, u64_workload,
    SipCasFloor, U64_SEED,
};
use cellrate::{Clock, KeyedLimiter, Limiter, ManualClock, QuotaChange, TickClock};
use std::hint::black_box;
use std::time::Instant;

/// `checks` calls of `check(i)`, timed (to stderr: a rough figure; time with the paired
/// suites); returns how many were allowed.
fn timed(checks: usize, check: impl FnMut(usize) -> bool) -> usize {
    let start = Instant::now();
    let allowed = profiled_count(checks, check);
    eprintln!("loop took {:?}", start.elapsed());
    allowed
}

/// The loop itself, kept out of line so that a profiler can count it alone (callgrind's
/// `--toggle-collect='*profiled_count*'`).
#[inline(never)]
fn profiled_count(checks: usize, mut check: impl FnMut(usize) -> bool) -> usize {
    let mut allowed = 0;
    for i in 0..checks {
        allowed += usize::from(check(i));
    }
    allowed
}

/// [`timed`] over `order`, visited in turn.
fn walk(order: &[u64], checks: usize, check: impl Fn(&u64) -> bool) -> usize {
    timed(checks, |i| check(black_box(&order[i & (order.len() - 1)])))
}

/// [`timed`] of `subject`'s spends.
fn spends(subject: &impl Spend, checks: usize) -> usize {
    timed(checks, |_| black_box(subject).spend())
}

/// A limiter on the time passed in, for the `limiter_at*` subjects.
fn at_limiter(path: Path, changed: bool) -> Limiter<ManualClock> {
    let limiter = Limiter::with_clock(path.quota(), ManualClock::new());
    if changed {
        limiter
            .at(NOW)
            .set_quota(path.quota(), QuotaChange::KeepSpent);
    }
    if path == Path::Denied {
        assert!(limiter.at(NOW).check_n(1).is_ok(), "the first spend passes");
    }
    limiter
}

/// The single-limiter subjects: allowed checks (or, for `_denied`, denied ones), or `None` for
/// a name that is not one of them.
fn single(subject: &str, checks: usize) -> Option<(usize, usize)> {
    let (allowed, denied) = (Path::Allowed, Path::Denied);
    let at = |limiter: &Limiter<ManualClock>| {
        timed(checks, |_| black_box(limiter).at(NOW).check_n(1).is_ok())
    };
    Some(match subject {
        "limiter_at" => (at(&at_limiter(allowed, false)), checks),
        "limiter_at_read" => {
            let limiter = at_limiter(allowed, false);
            let n = timed(checks, |_| read(black_box(&limiter).at(NOW).check_n(1)));
            (n, checks)
        }
        "limiter_at_changed" => (at(&at_limiter(allowed, true)), checks),
        "limiter_at_denied" => (at(&at_limiter(denied, false)), 0),
        "limiter_at_denied_changed" => (at(&at_limiter(denied, true)), 0),
        "limiter_at_named" => {
            let limiter = Limiter::with_clock(allowed.quota(), ManualClock::new()).named("api");
            let n = timed(checks, |_| black_box(&limiter).at(NOW).check_n(1).is_ok());
            (n, checks)
        }
        "limiter_check" => (spends(&CellrateClock::new(allowed), checks), checks),
        "limiter_check_read" => (spends(&CellrateRead::new(allowed), checks), checks),
        "governor_check" => (spends(&GovernorClock::new(allowed), checks), checks),
        "governor_check_read" => (spends(&GovernorRead::new(allowed), checks), checks),
        "floor_cas" => (spends(&FloorCas::new(), checks), checks),
        _ => return None,
    })
}

pub fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let subject = args.get(1).map_or("new", String::as_str);
    let n: usize = args
        .get(2)
        .map_or(1_000, |a| a.parse().expect("a key count"));
    let checks: usize = args
        .get(3)
        .map_or(1_000_000, |a| a.parse().expect("a check count"));
    if let Some((allowed, expected)) = single(subject, checks) {
        assert_eq!(allowed, expected, "{subject} left its path");
        println!("{subject}: {checks} checks");
        return;
    }
    let (keys, order) = u64_workload(n, U64_SEED);
    let key_refs: Vec<&u64> = keys.iter().collect();
    let allowed = match subject {
        "default" => {
            let ours: KeyedLimiter<u64> = cellrate_limiter(&key_refs, TickClock::new());
            walk(&order, checks, |k| ours.check_key(k).is_ok())
        }
        "new" => {
            let ours = default_limiter(&key_refs);
            walk(&order, checks, |k| ours.check_key(k).is_ok())
        }
        "at" => {
            let ours: KeyedLimiter<u64> = cellrate_limiter(&key_refs, TickClock::new());
            let now = ours.clock().now();
            walk(&order, checks, |k| ours.at(now).key(k).check_n(1).is_ok())
        }
        "siphash_at" => {
            let ours = siphash_limiter(&key_refs);
            let now = ours.clock().now();
            walk(&order, checks, |k| ours.at(now).key(k).check_n(1).is_ok())
        }
        "floor" => {
            let floor = SipCasFloor::new(n);
            walk(&order, checks, |k| floor.check(k))
        }
        "governor" => {
            let theirs = governor_limiter(&keys);
            walk(&order, checks, |k| theirs.check_key(k).is_ok())
        }
        other => panic!("unknown subject {other}"),
    };
    assert_eq!(allowed, checks, "every check is allowed");
    println!("{subject}: {n} keys, {checks} checks");
}
