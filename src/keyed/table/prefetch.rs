//! A hint to the processor to start fetching a slot's cache line: for batches of checks, and for
//! the line after home's in a single one.

use super::slot::Slot;

/// Asks the processor to start loading the cache line of `slot` into every cache level, and
/// returns at once. Changes nothing and cannot fault; a no-op where there is no such hint
/// (other architectures, and the loom models, whose atomics are not memory words).
#[inline]
pub(super) fn prefetch(slot: &Slot) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let line = (slot as *const Slot).cast::<i8>();
        // SAFETY:
        // - `_mm_prefetch` needs the `sse` target feature, which every x86_64 processor has
        //   (it is in the x86_64 baseline that rustc compiles for);
        // - the hint does not access memory in the abstract machine and never faults; `line`
        //   comes from a live reference anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(line) };
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    let _ = slot;
}
