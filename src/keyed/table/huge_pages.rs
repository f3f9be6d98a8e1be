//! Huge pages for the slot array, on Linux: the advice (`madvise(MADV_HUGEPAGE)`) that lets the
//! kernel back the table with 2 MiB pages, for [`huge_pages`].
//!
//! A table for 1,000,000 keys is 20 MB: 4,883 pages of 4 KiB, more than the second-level TLB
//! holds, so a check of a random key nearly always walks the page tables as well as missing
//! the cache. In 2 MiB pages the table is 10 pages. The price is resident memory: the kernel
//! commits a whole huge page on the first touch of any slot in it, so a table becomes resident
//! after a few dozen keys instead of growing 4 KiB per key.
//!
//! [`huge_pages`]: super::KeyedLimiterBuilder::huge_pages

use super::slot::Slot;

/// The size of a huge page on x86_64 and on aarch64 with 4 KiB pages. A span aligned to it is
/// aligned to the page size of every Linux target, so the advice is valid everywhere.
#[cfg(all(not(loom), any(test, target_os = "linux")))]
const HUGE_PAGE: usize = 2 << 20;

/// The whole huge pages within `bytes` bytes from `addr`: their start and length, or `None`
/// if there is none (the table is smaller than a huge page, or straddles one boundary).
#[cfg(all(not(loom), any(test, target_os = "linux")))]
fn huge_page_span(addr: usize, bytes: usize) -> Option<(usize, usize)> {
    let start = addr.checked_add(HUGE_PAGE - 1)? & !(HUGE_PAGE - 1);
    let end = addr.checked_add(bytes)? & !(HUGE_PAGE - 1);
    (end > start).then(|| (start, end - start))
}

/// Advises the kernel to back the whole huge pages of `slots` with huge pages. `true` if it
/// accepted the advice: Linux with transparent huge pages built in, and a table holding at
/// least one whole aligned huge page (always from 4 MiB, about 210,000 keys; between 2 and
/// 4 MiB it depends on where the allocator put it). Accepted advice is no promise: the kernel
/// uses small pages where transparent huge pages are turned off (`never`), where it finds no
/// free huge page, and for pages already touched before the advice.
///
/// The advice changes how the pages are backed, never what they hold. If the allocator later
/// reuses the memory (after the table is dropped), its allocations there may be backed by huge
/// pages too: more resident memory, nothing else.
#[cfg(all(target_os = "linux", not(loom)))]
pub(crate) fn advise(slots: &[Slot]) -> bool {
    let Some((start, len)) = huge_page_span(slots.as_ptr() as usize, core::mem::size_of_val(slots))
    else {
        return false;
    };
    // SAFETY:
    // - `start..start + len` lies within the allocation of `slots` (`huge_page_span` only
    //   shrinks the span), which stays mapped while `slots` is borrowed;
    // - `start` is aligned to 2 MiB, a multiple of the page size, as `madvise` requires;
    // - MADV_HUGEPAGE only sets how the kernel backs these pages: their contents, protection
    //   and addresses stay as they are, so no reference into them is affected.
    unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) == 0 }
}

/// Elsewhere there is no such advice: the table keeps the system's pages.
#[cfg(not(all(target_os = "linux", not(loom))))]
pub(crate) fn advise(_slots: &[Slot]) -> bool {
    false
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{huge_page_span, HUGE_PAGE};
    use crate::{KeyedLimiter, Quota};

    #[test]
    fn span_is_the_whole_huge_pages_inside() {
        let h = HUGE_PAGE;
        assert_eq!(huge_page_span(4 * h, 3 * h), Some((4 * h, 3 * h)));
        assert_eq!(huge_page_span(4 * h + 16, 3 * h), Some((5 * h, 2 * h)));
        assert_eq!(huge_page_span(4 * h - 16, 2 * h + 32), Some((4 * h, 2 * h)));
        assert_eq!(
            huge_page_span(4 * h + 16, h),
            None,
            "straddles one boundary"
        );
        assert_eq!(huge_page_span(16, h - 32), None, "smaller than a huge page");
        assert_eq!(
            huge_page_span(usize::MAX - 15, 16),
            None,
            "no overflow at the top"
        );
    }

    /// Whether the mapping holding `addr` carries the huge-page advice: the `hg` flag
    /// (VM_HUGEPAGE, set by MADV_HUGEPAGE) in its `VmFlags` line of /proc/self/smaps,
    /// whatever the system's THP mode. `None` if smaps has no such line for it.
    #[cfg(target_os = "linux")]
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
    #[cfg(target_os = "linux")]
    #[test]
    fn advice_reaches_the_tables_mapping() {
        let build = |keys, huge| {
            KeyedLimiter::<u64>::builder(Quota::per_second(5))
                .max_keys(keys)
                .huge_pages(huge)
                .build()
        };
        let (plain, huge, small) = (
            build(1 << 20, false),
            build(1 << 20, true),
            build(1000, true),
        );
        if !huge.huge_pages() {
            eprintln!("skipped: the kernel refuses MADV_HUGEPAGE");
            return;
        }
        assert!(!plain.huge_pages(), "not asked for");
        assert!(!small.huge_pages(), "smaller than a huge page");
        let middle = |l: &KeyedLimiter<u64>| {
            let slots = &l.table.slots;
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
}
