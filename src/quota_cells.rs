//! `Cells`: a [`Limiter`](crate::Limiter)'s bucket with its quota, and the ones that quota
//! changes replace them by.
//!
//! A cell is one bucket and the quota its TAT is meant for. The quota of a cell never changes:
//! a change makes a new cell under the new quota, with the TAT that its [`QuotaChange`] rule
//! gives, and *moves* the old cell there in one compare-and-swap of the old cell's word, from
//! the TAT it rebased to [`MOVED`] (`bucket.rs`). So every operation decides with the quota of
//! the cell whose TAT it read: one that read the old word before the move fails its
//! compare-and-swap and follows the cell's `next` link, and a moved word is never written
//! again, so no operation can find the TAT it read there later (no ABA). Checks take no lock
//! and never wait for a change.
//!
//! The first cell (the quota the limiter was made with) lives inside the limiter: a limiter
//! whose quota never changed decides on it exactly as a bare bucket does (`bucket.rs` says
//! where it looks for [`MOVED`]). Later cells are allocated by the changes and freed with the limiter, never
//! before (a stalled check may still hold any of them), so each change keeps
//! `size_of::<Cell>()` bytes until the limiter is dropped.
//!
//! # Atomic orderings
//! A change writes its cell, claims the old cell's `next` link, then writes [`MOVED`] with
//! `Release` and stores `live` with `Release`. A check that finds [`MOVED`] issues an `Acquire`
//! fence before following `next`, and loads `live` with `Acquire`, so the cell it reaches is
//! whole (under loom every read of a cell's quota is checked against its write: [`Published`]).
//!
//! [`QuotaChange`]: crate::QuotaChange

use crate::bucket::{Bucket, Change, LAST_TAT, MOVED};
use crate::bucket_ref::TatStore;
use crate::gcra::{self, Booking};
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;
use crate::sync::{fence, AtomicPtr, Ordering, Published};
use alloc::boxed::Box;
use core::ptr;
use crossbeam_utils::Backoff;

/// One bucket and the quota its TAT is meant for.
#[derive(Debug)]
pub(crate) struct Cell {
    pub(crate) bucket: Bucket,
    quota: Published<Quota>,
    /// The cell this one moved to; null while it is live.
    next: AtomicPtr<Cell>,
}

impl Cell {
    fn new(quota: Quota, tat: u64) -> Cell {
        Cell {
            bucket: Bucket::new(tat),
            quota: Published::new(quota),
            next: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The quota of this cell.
    #[inline(always)]
    pub(crate) fn quota(&self) -> &Quota {
        self.quota.get()
    }

    /// The cell this one moved to. Only for a cell whose word was seen holding [`MOVED`].
    #[inline]
    fn next(&self) -> &Cell {
        // Acquire: pairs with the Release write of MOVED that the caller saw (module docs).
        fence(Ordering::Acquire);
        // Relaxed: ordered by the fence above.
        let next = self.next.load(Ordering::Relaxed);
        assert!(!next.is_null(), "a moved cell names the cell it moved to");
        // SAFETY:
        // - `next` was made by `Box::into_raw` in `Cells::change` and is freed only when the
        //   `Cells` that owns this cell is dropped, which outlives `&self`;
        // - its contents were written before the Release write of MOVED (fence above).
        unsafe { &*next }
    }
}

/// The cells of one limiter: the first inline, later ones linked from it.
#[derive(Debug)]
pub(crate) struct Cells {
    head: Cell,
    /// The last cell a change made; null while there is none (the head is live).
    live: AtomicPtr<Cell>,
}

impl Cells {
    /// One cell under `quota` at `tat`.
    pub(crate) fn new(quota: Quota, tat: u64) -> Cells {
        Cells {
            head: Cell::new(quota, tat),
            live: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The first cell, for the broken twins of the loom models.
    #[cfg(loom)]
    pub(crate) fn head(&self) -> &Cell {
        &self.head
    }

    /// The cell the last change made (the head if none), with its id for [`TatStore`]. It may
    /// have moved since: operations on it follow `next`.
    #[inline]
    pub(crate) fn live(&self) -> (u64, &Cell) {
        // Acquire: pairs with the Release store in `change`, so the cell reads whole.
        let live = self.live.load(Ordering::Acquire);
        if live.is_null() {
            (0, &self.head)
        } else {
            // SAFETY: as in `Cell::next` (the Acquire load above orders its writes).
            (live as usize as u64, unsafe { &*live })
        }
    }

    /// The cell of `id` (0: the head; otherwise the address of a cell, from [`Cells::live`]).
    fn cell(&self, id: u64) -> &Cell {
        if id == 0 {
            &self.head
        } else {
            // SAFETY:
            // - a non-zero id is the address of a cell of these `Cells` (`live`): ids travel
            //   only with the store they came from (`BucketRef`, `Reservation`, whose
            //   `into_owned` checks the store), and cells are freed only with the `Cells`.
            unsafe { &*(id as usize as *const Cell) }
        }
    }

    /// Spends `cost` tokens from the live cell at `now(its quota)`, then calls `moved` with the
    /// decision if the head had moved. A named limiter's head has (see [`Cells::move_head`]):
    /// its counting rides on the path a changed limiter takes, so the checks of every other
    /// limiter test nothing for it.
    ///
    /// The time is read from the quota of the cell being decided on, not from the live quota
    /// read first: that read would be a second load of the contended line (`live`) ahead of
    /// the CAS, and the quota it gave could be stale by the time the cell is decided on.
    #[inline(always)]
    pub(crate) fn spend_then(
        &self,
        cost: u32,
        now: impl Fn(&Quota) -> u64,
        moved: impl FnOnce(&Result<Allowed, Denied>),
    ) -> Result<Allowed, Denied> {
        let mut moved = Some(moved);
        self.on_live_then(
            |cell| {
                let quota = cell.quota();
                cell.bucket.spend(cost, now(quota), quota)
            },
            |done| {
                if let Some(moved) = moved.take() {
                    moved(done)
                }
            },
        )
    }

    /// Moves the head to a cell under the same quota and TAT, unless it has moved already:
    /// from then on, every operation takes the moved path (see [`Cells::spend_then`]).
    #[cfg(feature = "std")]
    pub(crate) fn move_head(&self) {
        if self.head.bucket.load() != MOVED {
            self.change(*self.head.quota(), |tat, _| tat);
        }
    }

    /// `op` on the live cell: on the head, then, once it has moved, on the cell the last
    /// change made, following `next` while `op` finds its cell moved (`None`). Both calls of
    /// `op` are inlined here, so that a changed limiter runs the same decision as one that
    /// never changed and the answer stays in registers; the moved path is marked cold, so
    /// that it takes no registers from the head's.
    #[inline(always)]
    fn on_live<T>(&self, op: impl FnMut(&Cell) -> Option<T>) -> T {
        self.on_live_then(op, |_| ())
    }

    /// [`Cells::on_live`], calling `moved` with the answer when it came from the moved path.
    #[inline(always)]
    fn on_live_then<T>(
        &self,
        mut op: impl FnMut(&Cell) -> Option<T>,
        mut moved: impl FnMut(&T),
    ) -> T {
        if let Some(done) = op(&self.head) {
            return done;
        }
        moved_head();
        let (id, live) = self.live();
        // The head moved, but `live` may not name its successor yet.
        let mut cell = if id == 0 { self.head.next() } else { live };
        loop {
            if let Some(done) = op(cell) {
                moved(&done);
                return done;
            }
            cell = cell.next();
        }
    }

    /// Whole tokens at `now` in the live cell.
    #[inline]
    pub(crate) fn available(&self, now: u64) -> u32 {
        self.on_live(|cell| cell.bucket.available(now, cell.quota()))
    }

    /// Gives back `n` tokens at `now` to the live cell.
    #[inline]
    pub(crate) fn refund(&self, n: u32, now: u64) {
        self.on_live(|cell| cell.bucket.refund(n, now, cell.quota()).then_some(()))
    }

    /// Moves the live cell to a new cell under `quota`, whose TAT is `rebase(TAT, old quota)`
    /// for the live cell's TAT at the move. Changes that race are made one after the other.
    pub(crate) fn change(&self, quota: Quota, rebase: impl Fn(u64, &Quota) -> u64) {
        let new = Box::into_raw(Box::new(Cell::new(quota, 0)));
        // SAFETY: just made; freed only with `self` (`Drop`).
        let cell = unsafe { &*new };
        let from = self.claim(new);
        let old = from.quota();
        let mut tat = from.bucket.load();
        loop {
            // No check can reach `cell` before `from` holds MOVED: a plain write.
            cell.bucket.reset(rebase(tat, old).min(LAST_TAT));
            match from.bucket.mark_moved(tat) {
                Ok(()) => break,
                Err(found) => tat = found,
            }
        }
        // Release: publishes `cell` to checks that load `live` (module docs).
        self.live.store(new, Ordering::Release);
    }

    /// Makes `new` the `next` of the live cell, and returns that cell. A change that claimed
    /// it first is waited for, and `new` goes after the cell it made.
    fn claim(&self, new: *mut Cell) -> &Cell {
        let mut from = self.live().1;
        let backoff = Backoff::new();
        loop {
            // AcqRel: publishes `new` to a change that finds it here, and acquires the cell
            // of the change that won.
            match from.next.compare_exchange(
                ptr::null_mut(),
                new,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return from,
                Err(_) => {
                    // That change moves `from` next; its cell is live once it has.
                    while from.bucket.load() != MOVED {
                        backoff.snooze();
                    }
                    from = from.next();
                }
            }
        }
    }

    /// Deliberately broken [`Cells::change`]: loads the TAT, rebases it and stores MOVED with
    /// no compare-and-swap, so an operation that lands in between is lost. Only for loom.
    #[cfg(loom)]
    pub(crate) fn change_racy(&self, quota: Quota, rebase: impl Fn(u64, &Quota) -> u64) {
        let new = Box::into_raw(Box::new(Cell::new(quota, 0)));
        // SAFETY: as in `change`.
        let cell = unsafe { &*new };
        let from = self.claim(new);
        cell.bucket.reset(rebase(from.bucket.load(), from.quota()));
        from.bucket.store_racy(MOVED);
        self.live.store(new, Ordering::Release);
    }
}

/// Marks the path of a moved head as cold for the optimiser (block placement and register
/// allocation favour the head's decision).
#[cold]
#[inline(never)]
fn moved_head() {}

impl Drop for Cells {
    fn drop(&mut self) {
        // Relaxed: `&mut self`, no other thread can reach the cells.
        let mut next = self.head.next.load(Ordering::Relaxed);
        while !next.is_null() {
            // SAFETY:
            // - every `next` was made by `Box::into_raw` in `change` and is linked once;
            // - with `&mut self`, no check or change can still refer to it.
            let cell = unsafe { Box::from_raw(next) };
            next = cell.next.load(Ordering::Relaxed);
        }
    }
}

/// A limiter's cells hold one TAT per cell, found by its id ([`Cells::live`]). Each cell
/// decides with its own quota; an operation on a moved cell books on the cell it moved to,
/// and rewrites nothing (its rewrite was meant for the old quota).
impl TatStore for Cells {
    fn book(
        &self,
        id: u64,
        cost: u32,
        now: u64,
        max_wait_ns: u64,
        _quota: &Quota,
        _start_empty: bool,
    ) -> Result<(Change, Booking), Denied> {
        let mut cell = self.cell(id);
        loop {
            let quota = cell.quota();
            let max_wait_ns = gcra::max_wait_ns(max_wait_ns, quota);
            let booked = cell.bucket.update(|tat| {
                let (new, booking) = gcra::reserve(tat, now, cost, max_wait_ns, quota)?;
                if new == MOVED {
                    return Err(gcra::unrepresentable_at(tat, now, quota));
                }
                Ok((new, booking))
            });
            match booked {
                Ok(booked) => return Ok(booked),
                Err(Some(denied)) => return Err(denied),
                Err(None) => cell = cell.next(),
            }
        }
    }

    fn rewrite(&self, id: u64, f: &mut dyn FnMut(u64) -> Option<u64>) -> bool {
        self.cell(id)
            .bucket
            .update(|tat| f(tat).map(|new| (new, ())).ok_or(()))
            .is_ok()
    }

    fn tat(&self, id: u64, _now: u64, _quota: &Quota, _start_empty: bool) -> u64 {
        self.cell(id).bucket.load()
    }

    #[cfg(loom)]
    fn store_racy(&self, id: u64, tat: u64) {
        self.cell(id).bucket.store_racy(tat)
    }
}
