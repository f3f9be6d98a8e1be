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
//! Arguments: the subject (`default`: `check_key` on `TickClock`, the table sized for the keys;
//! `new`: `check_key` of `KeyedLimiter::new`, the default table; `at`: `check_key_n_at`;
//! `siphash_at`: `check_key_n_at` with SipHash-1-3 fingerprints; `floor`: the SipHash + CAS
//! floor; `governor`: governor's default `check_key`), the number of u64 keys, and the number
//! of checks. The instruction count of the loop over the checks is per check; the set-up
//! (every key checked once) is outside the loop.

use crate::keyed::subjects::{
    cellrate_limiter, default_limiter, governor_limiter, siphash_limiter, u64_workload,
    SipCasFloor, U64_SEED,
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

/// [`profiled_loop`], with its time printed to stderr: a rough figure (time with the paired
/// suites), which the alternating scripts of a profiling session can still read.
fn timed(order: &[u64], checks: usize, check: impl Fn(&u64) -> bool) -> usize {
    let start = Instant::now();
    let allowed = profiled_loop(order, checks, check);
    eprintln!("loop took {:?}", start.elapsed());
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
    let allowed = match subject {
        "default" => {
            let ours: KeyedLimiter<u64> = cellrate_limiter(&key_refs, TickClock::new());
            timed(&order, checks, |k| ours.check_key(k).is_ok())
        }
        "new" => {
            let ours = default_limiter(&key_refs);
            timed(&order, checks, |k| ours.check_key(k).is_ok())
        }
        "at" => {
            let ours: KeyedLimiter<u64> = cellrate_limiter(&key_refs, TickClock::new());
            let now = ours.clock().now();
            timed(&order, checks, |k| ours.check_key_n_at(k, 1, now).is_ok())
        }
        "siphash_at" => {
            let ours = siphash_limiter(&key_refs);
            let now = ours.clock().now();
            timed(&order, checks, |k| ours.check_key_n_at(k, 1, now).is_ok())
        }
        "floor" => {
            let floor = SipCasFloor::new(n);
            timed(&order, checks, |k| floor.check(k))
        }
        "governor" => {
            let theirs = governor_limiter(&keys);
            timed(&order, checks, |k| theirs.check_key(k).is_ok())
        }
        other => panic!("unknown subject {other}"),
    };
    assert_eq!(allowed, checks, "every check is allowed");
    println!("{subject}: {n} keys, {checks} checks");
}
