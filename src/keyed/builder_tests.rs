use crate::{KeyedLimiter, Quota};

/// Whether the mapping holding `addr` carries the huge-page advice: the `hg` flag
/// (VM_HUGEPAGE, set by MADV_HUGEPAGE) in its `VmFlags` line of /proc/self/smaps,
/// whatever the system's THP mode. `None` if smaps has no such line for it.
fn advised(addr: usize) -> Option<bool> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in smaps.lines() {
        let range = line
            .split_whitespace()
            .next()
            .and_then(|r| r.split_once('-'));
        let bounds = range.and_then(|(lo, hi)| {
            let lo = usize::from_str_radix(lo, 16).ok()?;
            Some((lo, usize::from_str_radix(hi, 16).ok()?))
        });
        if let Some((lo, hi)) = bounds {
            inside = (lo..hi).contains(&addr);
        } else if let Some(flags) = line.strip_prefix("VmFlags:").filter(|_| inside) {
            return Some(flags.split_whitespace().any(|f| f == "hg"));
        }
    }
    None
}

/// With `huge_pages(true)` the advice reaches the kernel for the table's own mapping, and
/// only then; the limiter works the same. Skipped where the kernel refuses the advice (no
/// transparent huge pages built in) or smaps shows no flags.
#[test]
#[cfg_attr(miri, ignore = "madvise and /proc/self/smaps are outside Miri")]
fn advice_reaches_the_tables_mapping() {
    // Per hour: the sixth check of a key is denied however slowly the test runs.
    let build = |keys, huge| {
        let builder = KeyedLimiter::<u64>::builder(Quota::per_hour(5)).max_keys(keys);
        if huge {
            builder.huge_pages(true).build()
        } else {
            builder.build()
        }
    };
    let (plain, huge, small) = (
        build(1 << 20, false),
        build(1 << 20, true),
        build(1000, true),
    );
    if !huge.table.huge_pages {
        eprintln!("skipped: the kernel refuses MADV_HUGEPAGE");
        return;
    }
    assert!(!plain.table.huge_pages, "not asked for");
    assert!(!small.table.huge_pages, "smaller than a huge page");
    let middle = |l: &KeyedLimiter<u64>| {
        let slots = l.table.slots.as_slice();
        &slots[slots.len() / 2] as *const _ as usize
    };
    let Some(advised_huge) = advised(middle(&huge)) else {
        eprintln!("skipped: /proc/self/smaps shows no VmFlags");
        return;
    };
    assert!(advised_huge, "the huge table's mapping is advised");
    assert_eq!(advised(middle(&plain)), Some(false), "the plain one is not");
    for key in 0..1000u64 {
        for _ in 0..5 {
            assert!(huge.check_key(&key).is_ok());
        }
        assert!(huge.check_key(&key).is_err());
    }
    assert_eq!(huge.len(), 1000);
}
