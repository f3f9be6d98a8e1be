//! `SlotArray`: the memory of a table's slots, all EMPTY (zero) and resident only where
//! touched: an anonymous mapping of its own where the system has `mmap` (why not a zeroed
//! allocation: docs/design.md §6.2), else a zeroed allocation.

use super::slot::Slot;
#[cfg(any(miri, all(not(unix), not(loom))))]
use alloc::boxed::Box;
use core::ops::Deref;

/// Why the slot array could not be allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(loom, allow(dead_code))] // loom builds its tiny tables without the allocator
pub(crate) enum AllocError {
    /// The size in bytes does not fit in `isize`.
    TooLarge,
    /// The system would not provide the memory.
    Failed,
}

/// `n` EMPTY slots, owned.
pub(crate) struct SlotArray {
    #[cfg(all(unix, not(loom), not(miri)))]
    mapped: Mapped,
    #[cfg(not(all(unix, not(loom), not(miri))))]
    boxed: alloc::boxed::Box<[Slot]>,
}

impl Deref for SlotArray {
    type Target = [Slot];

    fn deref(&self) -> &[Slot] {
        #[cfg(all(unix, not(loom), not(miri)))]
        return self.mapped.slots();
        #[cfg(not(all(unix, not(loom), not(miri))))]
        return &self.boxed;
    }
}

/// `n` EMPTY slots (at least 1).
pub(crate) fn zeroed_slots(n: usize) -> Result<SlotArray, AllocError> {
    assert!(n > 0, "a keyed table has at least one slot");
    #[cfg(all(unix, not(loom), not(miri)))]
    return Mapped::new(n).map(|mapped| SlotArray { mapped });
    #[cfg(all(not(unix), not(loom)))]
    return zeroed_box(n).map(|boxed| SlotArray { boxed });
    #[cfg(miri)]
    return zeroed_box(n).map(|boxed| SlotArray { boxed });
    #[cfg(loom)]
    return Ok(SlotArray {
        boxed: (0..n).map(|_| Slot::loom_empty()).collect(),
    });
}

/// An anonymous private mapping of `n` slots.
#[cfg(all(unix, not(loom), not(miri)))]
struct Mapped {
    ptr: core::ptr::NonNull<Slot>,
    len: usize,
    bytes: usize,
}

// SAFETY:
// - `Mapped` owns its mapping alone (it is made in `new` and unmapped in `drop`), and the
//   slots in it are atomics, which are `Send` and `Sync`: the mapping may move to and be
//   shared with other threads as a `Box<[Slot]>` would.
#[cfg(all(unix, not(loom), not(miri)))]
unsafe impl Send for Mapped {}
// SAFETY: as for `Send`.
#[cfg(all(unix, not(loom), not(miri)))]
unsafe impl Sync for Mapped {}

#[cfg(all(unix, not(loom), not(miri)))]
impl Mapped {
    fn new(n: usize) -> Result<Mapped, AllocError> {
        let bytes = n
            .checked_mul(core::mem::size_of::<Slot>())
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or(AllocError::TooLarge)?;
        // SAFETY:
        // - a new anonymous private mapping: no file, no fixed address, so it can overlap
        //   nothing the process uses; `bytes` is non-zero (`n > 0`).
        let ptr = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(AllocError::Failed);
        }
        let ptr = core::ptr::NonNull::new(ptr.cast::<Slot>()).ok_or(AllocError::Failed)?;
        Ok(Mapped { ptr, len: n, bytes })
    }

    fn slots(&self) -> &[Slot] {
        // SAFETY:
        // - the mapping is `bytes = len * 16` bytes, readable and writable, page-aligned (so
        //   aligned for `Slot`), and stays mapped until `drop`, which `&self` outlives;
        // - every `Slot` in it is initialised: an anonymous mapping reads as zeros, and
        //   all-zero bytes are a valid `Slot` of two zero words (`Slot` is `repr(C)` of two
        //   `repr(transparent)` wrappers of atomics, each with the representation of `u64`);
        // - it is only ever reached through shared references to atomics.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(all(unix, not(loom), not(miri)))]
impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY:
        // - the mapping was made by `mmap` in `new` with this address and length, is unmapped
        //   only here, and no reference into it outlives `&mut self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.bytes) };
    }
}

/// `n` EMPTY slots from the global allocator.
#[cfg(any(miri, all(not(unix), not(loom))))]
fn zeroed_box(n: usize) -> Result<Box<[Slot]>, AllocError> {
    use core::alloc::Layout;
    let layout = Layout::array::<Slot>(n).map_err(|_| AllocError::TooLarge)?;
    // SAFETY:
    // - `layout` has a non-zero size: `n > 0` (asserted) and `Slot` is 16 bytes.
    let ptr = unsafe { alloc::alloc::alloc_zeroed(layout) }.cast::<Slot>();
    if ptr.is_null() {
        return Err(AllocError::Failed);
    }
    let slice = core::ptr::slice_from_raw_parts_mut(ptr, n);
    // SAFETY:
    // - `ptr` is non-null and was returned by the global allocator for
    //   `Layout::array::<Slot>(n)`, which is exactly the layout `Box<[Slot]>` of length `n`
    //   frees with, so the box owns a matching allocation;
    // - it is aligned for `Slot` (the layout's alignment);
    // - all `n` elements are initialised: the bytes are zero, and all-zero bytes are a valid
    //   `Slot` (see `Mapped::slots`);
    // - nothing else refers to the allocation.
    Ok(unsafe { Box::from_raw(slice) })
}
