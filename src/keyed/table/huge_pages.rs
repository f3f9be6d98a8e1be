//! Huge pages for the slot array, on Linux: the advice (`madvise(MADV_HUGEPAGE)`) that lets the
//! kernel back the table with 2 MiB pages, for
//! [`huge_pages`](crate::KeyedLimiterBuilder::huge_pages) (docs/design.md §6.2).

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
/// accepted the advice (transparent huge pages built in, and at least one whole aligned huge
/// page in the table), which is no promise: the kernel still uses small pages where THP is
/// `never`, where it finds no free huge page, and for pages touched before the advice.
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
#[path = "huge_pages_tests.rs"]
mod tests;
