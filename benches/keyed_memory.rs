//! Memory per key of cellrate's `KeyedLimiter` and governor 0.10's default keyed limiter, at
//! 1,000,000 keys (100,000 with `BENCH_QUICK=1`): u64 keys and 16-character `String` keys. Also cellrate's table in huge
//! pages (`huge_pages(true)`), and what they cost a table that holds few keys: 1,000 keys in
//! a table of the default capacity, with and without.
//!
//! Two measures per case, each case in a fresh child process so that they do not mix:
//! - heap bytes held by the limiter (a counting global allocator: bytes allocated minus
//!   bytes freed, from just before the limiter is built to after the last key is inserted;
//!   the caller's temporary key strings are freed inside the loop and cancel out);
//! - resident memory (`VmRSS` from /proc/self/status) before building and after filling.
//!
//! Run: `cargo bench -p cellrate-benches -- keyed_memory` (about 10 s).

use crate::record::{sized, Record};
use std::alloc::{GlobalAlloc, Layout, System};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicIsize, Ordering};

/// Keys per case (fewer in the reduced-size run).
fn keys() -> usize {
    sized(1_000_000, 100_000)
}

/// Net bytes allocated through the global allocator.
static NET: AtomicIsize = AtomicIsize::new(0);

struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so it
// upholds `GlobalAlloc`'s contract exactly as `System` does; the counter is a side effect.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        NET.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed through unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        NET.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc_zeroed` is passed through unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        NET.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract for `dealloc` is passed through unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        NET.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: the caller's contract for `realloc` is passed through unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Resident memory of this process, in bytes.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .unwrap_or("VmRSS: 0 kB");
    let kb: usize = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    kb * 1024
}

fn u64_key(i: usize) -> u64 {
    (i as u64 ^ 0x5555).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn string_key(i: usize) -> String {
    format!("{:016x}", u64_key(i)) // 16 characters
}

/// Builds a limiter with `build`, feeds it `keys` keys with `check`, and prints the figures.
fn measure<L>(name: &str, keys: usize, build: impl FnOnce() -> L, check: impl Fn(&L, usize)) {
    let (rss_before, heap_before) = (rss(), NET.load(Ordering::Relaxed));
    let limiter = build();
    let (rss_built, heap_built) = (rss(), NET.load(Ordering::Relaxed));
    for i in 0..keys {
        check(&limiter, i);
    }
    let (rss_after, heap_after) = (rss(), NET.load(Ordering::Relaxed));
    let per_key = |bytes: isize| bytes as f64 / keys as f64;
    println!(
        "{name:<26} heap {:>6.1} B/key ({:>5.1} MB; {:>5.1} MB before any key)   \
         resident +{:>6.1} B/key ({:>5.1} MB; +{:>5.1} MB before any key)",
        per_key(heap_after - heap_before),
        (heap_after - heap_before) as f64 / 1e6,
        (heap_built - heap_before) as f64 / 1e6,
        per_key(rss_after as isize - rss_before as isize),
        (rss_after - rss_before) as f64 / 1e6,
        (rss_built - rss_before) as f64 / 1e6,
    );
    Record::new("keyed_memory", "memory")
        .text("name", name)
        .num("keys", keys as f64)
        .num("heap_per_key", per_key(heap_after - heap_before))
        .num("heap_mb", (heap_after - heap_before) as f64 / 1e6)
        .num("heap_before_mb", (heap_built - heap_before) as f64 / 1e6)
        .num(
            "rss_per_key",
            per_key(rss_after as isize - rss_before as isize),
        )
        .num("rss_mb", (rss_after as f64 - rss_before as f64) / 1e6)
        .num(
            "rss_before_mb",
            (rss_built as f64 - rss_before as f64) / 1e6,
        )
        .write();
    std::hint::black_box(&limiter);
}

fn governor_quota() -> governor::Quota {
    governor::Quota::per_second(NonZeroU32::new(1_000).unwrap())
}

fn run(case: &str) {
    let quota = cellrate::Quota::per_second(1_000);
    match case {
        "cellrate-u64" => measure(
            "cellrate u64 keys",
            keys(),
            || {
                cellrate::KeyedLimiter::<u64>::builder(quota)
                    .max_keys(keys())
                    .build()
            },
            |l, i| assert!(l.check_key(&u64_key(i)).is_ok()),
        ),
        "cellrate-u64-default" => measure(
            "cellrate u64, default cap",
            keys(),
            || cellrate::KeyedLimiter::<u64>::new(quota),
            |l, i| assert!(l.check_key(&u64_key(i)).is_ok()),
        ),
        "cellrate-u64-huge" => measure(
            "cellrate u64, huge pages",
            keys(),
            || {
                cellrate::KeyedLimiter::<u64>::builder(quota)
                    .max_keys(keys())
                    .huge_pages(true)
                    .build()
            },
            |l, i| assert!(l.check_key(&u64_key(i)).is_ok()),
        ),
        // The price of huge pages: 1,000 keys in a table of the default capacity.
        "cellrate-1000-default" => measure(
            "1,000 keys, default cap",
            1_000,
            || cellrate::KeyedLimiter::<u64>::new(quota),
            |l, i| assert!(l.check_key(&u64_key(i)).is_ok()),
        ),
        "cellrate-1000-default-huge" => measure(
            "1,000 keys, same, huge",
            1_000,
            || {
                cellrate::KeyedLimiter::<u64>::builder(quota)
                    .huge_pages(true)
                    .build()
            },
            |l, i| assert!(l.check_key(&u64_key(i)).is_ok()),
        ),
        "cellrate-string" => measure(
            "cellrate String16 keys",
            keys(),
            || {
                cellrate::KeyedLimiter::<String>::builder(quota)
                    .max_keys(keys())
                    .build()
            },
            |l, i| assert!(l.check_key(string_key(i).as_str()).is_ok()),
        ),
        "cellrate-sweep-only" => measure(
            "cellrate, sweeps only",
            keys(),
            || cellrate::KeyedLimiter::<u64>::new(quota),
            // No key at all: does a sweep of the untouched table make it resident?
            |l, i| {
                if i == 0 {
                    assert_eq!(l.evict_idle(), 0);
                }
            },
        ),
        "governor-u64" => measure(
            "governor u64 keys",
            keys(),
            || governor::RateLimiter::<u64, _, _>::keyed(governor_quota()),
            |l, i| assert!(l.check_key(&u64_key(i)).is_ok()),
        ),
        "governor-string" => measure(
            "governor String16 keys",
            keys(),
            || governor::RateLimiter::<String, _, _>::keyed(governor_quota()),
            |l, i| assert!(l.check_key(&string_key(i)).is_ok()),
        ),
        other => panic!("unknown case {other}"),
    }
}

pub fn main() {
    // `cargo bench` passes `--bench`; a case name after the suite's runs that case alone.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if let Some(case) = args.get(1) {
        return run(case);
    }
    println!("{} keys per case, each case in its own process", keys());
    let cases = [
        "cellrate-u64",
        "cellrate-u64-default",
        "cellrate-sweep-only",
        "cellrate-u64-huge",
        "cellrate-1000-default",
        "cellrate-1000-default-huge",
        "governor-u64",
        "cellrate-string",
        "governor-string",
    ];
    for case in cases {
        let exe = std::env::current_exe().expect("own path");
        let status = std::process::Command::new(exe)
            .args(["keyed_memory", case])
            .status()
            .expect("child runs");
        assert!(status.success(), "{case} failed");
    }
}
