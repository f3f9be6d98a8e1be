//! `keyed_profile`: one subject's keyed checks in a loop, for instruction counts and profiles
//! (which depend on no load), not for timing. The loop is the function `profiled_loop`, so
//! that callgrind can count it alone:
//!
//! ```text
//! cargo bench -p cellrate-benches --no-run
//! valgrind --tool=callgrind --toggle-collect='*profiled_loop*' \
//!     target/release/deps/compare-* keyed_profile default 1000 1000000
//! perf stat -e instructions,cycles target/release/deps/compare-* keyed_profile default 1000000 20000000
//! ```
//!
//! Arguments: the subject (`default`: `check_key` on `TickClock`; `at`: `check_key_n_at`;
//! `siphash_at`: `check_key_n_at` with SipHash-1-3 fingerprints; `floor`: the SipHash + CAS
//! floor; `governor`: governor's default `check_key`), the number of u64 keys, and the number
//! of checks. The instruction count of the loop over the checks is per check; the set-up
//! (every key checked once) is outside the loop.

use crate::keyed::subjects::{
    cellrate_limiter, governor_limiter, siphash_limiter, u64_workload, SipCasFloor, U64_SEED,
};
use cellrate::{Clock, KeyedLimiter, TickClock};
use std::hint::black_box;
use std::time::Instant;

/// `checks` visits of `order` by `check`, kept out of line so that a profiler can count it
/// alone; returns how many were allowed.
#[inline(never)]
fn profiled_loop(order: &[u64], checks: usize, check: impl Fn(&u64) -> bool) -> usize {
    let mut allowed = 0;
    for i in 0..checks {
        allowed += usize::from(check(black_box(&order[i & (order.len() - 1)])));
    }
    allowed
}

pub fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let subject = args.get(1).map_or("default", String::as_str);
    let n: usize = args
        .get(2)
        .map_or(1_000, |a| a.parse().expect("a key count"));
    let checks: usize = args
        .get(3)
        .map_or(1_000_000, |a| a.parse().expect("a check count"));
    let (keys, order) = u64_workload(n, U64_SEED);
    let key_refs: Vec<&u64> = keys.iter().collect();
    let start = Instant::now();
    let allowed = match subject {
        "default" => {
            let ours: KeyedLimiter<u64> = cellrate_limiter(&key_refs, TickClock::new());
            let start = Instant::now();
            let allowed = profiled_loop(&order, checks, |k| ours.check_key(k).is_ok());
            report(start);
            allowed
        }
        "at" => {
            let ours: KeyedLimiter<u64> = cellrate_limiter(&key_refs, TickClock::new());
            let now = ours.clock().now();
            let start = Instant::now();
            let allowed = profiled_loop(&order, checks, |k| ours.check_key_n_at(k, 1, now).is_ok());
            report(start);
            allowed
        }
        "siphash_at" => {
            let ours = siphash_limiter(&key_refs);
            let now = ours.clock().now();
            let start = Instant::now();
            let allowed = profiled_loop(&order, checks, |k| ours.check_key_n_at(k, 1, now).is_ok());
            report(start);
            allowed
        }
        "floor" => {
            let floor = SipCasFloor::new(n);
            let start = Instant::now();
            let allowed = profiled_loop(&order, checks, |k| floor.check(k));
            report(start);
            allowed
        }
        "governor" => {
            let theirs = governor_limiter(&keys);
            let start = Instant::now();
            let allowed = profiled_loop(&order, checks, |k| theirs.check_key(k).is_ok());
            report(start);
            allowed
        }
        other => panic!("unknown subject {other}"),
    };
    let _ = start;
    assert!(allowed > 0);
    println!("{subject}: {n} keys, {checks} checks, {allowed} allowed");

    /// Prints the loop's ns per check (a rough figure; time with the paired suites).
    fn report(start: Instant) {
        eprintln!("loop took {:?}", start.elapsed());
    }
}
