//! One slot of the keyed table: a key's fingerprint and its TAT, packed in one 128-bit word,
//! and the zeroed allocation of the slot array.
//!
//! | word (fingerprint, TAT)   | meaning                                              |
//! |---------------------------|------------------------------------------------------|
//! | `(0, 0)`                  | EMPTY: never used. All-zero, so a zeroed page is a table of EMPTY slots |
//! | `(1, 0)`                  | TOMBSTONE: held a key once; free for reuse            |
//! | `(f, u64::MAX)`, `f >= 2` | PENDING: claimed for fingerprint `f`, not yet published |
//! | `(f, tat)`, `f >= 2`      | LIVE: the bucket of fingerprint `f`                  |
//!
//! Key identity and TAT live in one word, so one compare-and-swap checks both: a thread that
//! read `(X, tat)` cannot write into a slot that has since been given to key `Y`.

use crate::sync::AtomicU128;
use alloc::boxed::Box;

/// The fingerprint of a TOMBSTONE slot.
pub(crate) const TOMBSTONE_FP: u64 = 1;
/// The TAT of a PENDING slot. A real TAT never takes this value: a spend that would store it
/// is denied (it is the last nanosecond of the clock, 584 years after its origin).
pub(crate) const PENDING_TAT: u64 = u64::MAX;

/// The word of a never-used slot.
pub(crate) const EMPTY: u128 = pack(0, 0);
/// The word of a slot whose key was removed.
pub(crate) const TOMBSTONE: u128 = pack(TOMBSTONE_FP, 0);

/// The word holding `fingerprint` and `tat`.
#[inline(always)]
pub(crate) const fn pack(fingerprint: u64, tat: u64) -> u128 {
    ((fingerprint as u128) << 64) | tat as u128
}

/// The fingerprint half of a word.
#[inline(always)]
pub(crate) const fn fingerprint(word: u128) -> u64 {
    (word >> 64) as u64
}

/// The TAT half of a word.
#[inline(always)]
pub(crate) const fn tat(word: u128) -> u64 {
    word as u64
}

/// Whether the word is a published bucket (of any key).
#[inline(always)]
pub(crate) const fn is_live(word: u128) -> bool {
    fingerprint(word) > TOMBSTONE_FP && tat(word) != PENDING_TAT
}

/// Maps a 64-bit hash to a fingerprint, moving the two reserved values out of the way.
#[inline(always)]
pub(crate) const fn fingerprint_of_hash(hash: u64) -> u64 {
    if hash <= TOMBSTONE_FP {
        hash + 2
    } else {
        hash
    }
}

/// Why the slot array could not be allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(loom, allow(dead_code))] // loom builds its tiny tables without the allocator
pub(crate) enum AllocError {
    /// The size in bytes does not fit in `isize`.
    TooLarge,
    /// The allocator returned null.
    Failed,
}

/// `n` EMPTY slots. The memory comes zeroed from the allocator (`calloc`, which maps fresh
/// zero pages for large sizes without writing them), so untouched slots cost no resident
/// memory.
#[cfg(not(loom))]
pub(crate) fn zeroed_slots(n: usize) -> Result<Box<[AtomicU128]>, AllocError> {
    use core::alloc::Layout;
    assert!(n > 0, "a keyed table has at least one slot");
    let layout = Layout::array::<AtomicU128>(n).map_err(|_| AllocError::TooLarge)?;
    // SAFETY:
    // - `layout` has a non-zero size: `n > 0` (asserted) and `AtomicU128` is 16 bytes.
    let ptr = unsafe { alloc::alloc::alloc_zeroed(layout) }.cast::<AtomicU128>();
    if ptr.is_null() {
        return Err(AllocError::Failed);
    }
    let slice = core::ptr::slice_from_raw_parts_mut(ptr, n);
    // SAFETY:
    // - `ptr` is non-null and was returned by the global allocator for
    //   `Layout::array::<AtomicU128>(n)`, which is exactly the layout `Box<[AtomicU128]>` of
    //   length `n` frees with, so the box owns a matching allocation;
    // - it is aligned for `AtomicU128` (the layout's alignment);
    // - all `n` elements are initialised: the bytes are zero, and all-zero bytes are a valid
    //   `AtomicU128` holding 0 (it has the same in-memory representation as `u128`);
    // - nothing else refers to the allocation.
    Ok(unsafe { Box::from_raw(slice) })
}

/// `n` EMPTY slots (loom's stand-in atomics cannot be zero-initialised, so they are built).
#[cfg(loom)]
pub(crate) fn zeroed_slots(n: usize) -> Result<Box<[AtomicU128]>, AllocError> {
    Ok((0..n).map(|_| AtomicU128::new(EMPTY)).collect())
}
