//! A keyed table is resident only where keys are: 1,000 keys in the default table (2^20 keys'
//! worth of slots, 20 MB of address space) leave most of its pages untouched, also after the
//! allocator has seen large frees (after which glibc serves allocations of that size from
//! memory it keeps, and a zeroed allocation writes every page). Linux only: it reads the
//! table's mapping in /proc/self/smaps.
//!
//! A binary of its own: other tests' allocations would move the figures.
#![cfg(target_os = "linux")]

use cellrate::{KeyedLimiter, Quota};

/// The resident bytes of every mapping of exactly `bytes` (rounded up to pages), from
/// /proc/self/smaps.
fn resident_of_mappings_of(bytes: u64) -> Vec<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
    let size_kb = bytes.div_ceil(4096) * 4;
    let mut found = Vec::new();
    let mut size = None;
    for line in smaps.lines() {
        let field = |name: &str| {
            line.strip_prefix(name)
                .and_then(|rest| rest.trim().strip_suffix("kB"))
                .and_then(|n| n.trim().parse::<u64>().ok())
        };
        if let Some(kb) = field("Size:") {
            size = Some(kb);
        } else if let Some(kb) = field("Rss:") {
            if size == Some(size_kb) {
                found.push(kb * 1024);
            }
        }
    }
    found
}

#[test]
fn a_thousand_keys_leave_most_of_the_table_untouched_after_large_frees() {
    for size in [30 << 20, 25 << 20] {
        let big = vec![1u8; size];
        std::hint::black_box(&big);
    }
    let limiter = KeyedLimiter::<u64>::new(Quota::per_second(10));
    for key in 0..1_000u64 {
        limiter.check_key(&key).unwrap();
    }
    let table = limiter.capacity() as u64 * 16;
    let resident = resident_of_mappings_of(table);
    assert_eq!(
        resident.len(),
        1,
        "the {table}-byte table is not a mapping of its own"
    );
    // 1,000 random slots touch at most 1,000 pages of 4 KiB, of the table's 5,120.
    assert!(
        resident[0] <= 1_000 * 4096,
        "{} bytes of the {table}-byte table resident for 1,000 keys",
        resident[0]
    );
}
