//! `Cells`: a [`Limiter`](crate::Limiter)'s bucket with its quota (the *head*), and the two
//! *spares* that quota changes move it between. The protocol, its orderings and why each
//! operation is linearised on one cell's word: docs/design.md §10, *The protocol: cells*.

use crate::engine::bucket::{Bucket, Change, Tenure, LAST_TAT, MOVED};
use crate::engine::bucket_ref::TatStore;
use crate::engine::gcra::{self, Booking};
use crate::engine::give_back::{self, Ledger, Receipt};
use crate::outcome::{Allowed, Denied};
use crate::quota::{AtomicQuota, Quota};
use crate::sync::{fence, spin_wait, AtomicU64, Ordering};

#[cfg(all(test, loom))]
mod loom_tests;

/// The id of the head cell (index 0, version 0). A spare's id is `version << 2 | index`, with
/// index 1 or 2.
const HEAD: u64 = 0;

fn index(id: u64) -> usize {
    (id & 3) as usize
}

fn version(id: u64) -> u64 {
    id >> 2
}

/// The mask of a spare's values in the tenure `version`: a multiply-xorshift mix, so that
/// tenures have unrelated masks.
fn mask(version: u64) -> u64 {
    let x = version.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^ (x >> 29)
}

/// The head: the bucket and quota the limiter was made with.
#[derive(Debug)]
struct Head {
    bucket: Bucket,
    quota: Quota,
    /// The id of the spare the head moved to; written once, before its move.
    next: AtomicU64,
    ledger: Ledger,
}

/// A spare: a bucket word reused by quota changes, one tenure at a time.
#[derive(Debug)]
struct Spare {
    bucket: Bucket,
    /// Even: the tenure in force; odd: being written by a change. 0: never used.
    version: AtomicU64,
    quota: AtomicQuota,
    /// The id of the cell this one moved to, in its current tenure.
    next: AtomicU64,
    /// Kept across tenures: a receipt of an earlier tenure never reaches the bucket, and the
    /// bounds it gives are differences.
    ledger: Ledger,
}

impl Spare {
    fn new(quota: Quota) -> Spare {
        Spare {
            bucket: Bucket::new(0),
            version: AtomicU64::new(0),
            quota: AtomicQuota::new(quota),
            next: AtomicU64::new(HEAD),
            ledger: Ledger::new(),
        }
    }
}

/// One cell in one tenure: what every operation acts on.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub(crate) id: u64,
    pub(crate) quota: Quota,
    bucket: &'a Bucket,
    tenure: Tenure<'a>,
    ledger: &'a Ledger,
}

impl View<'_> {
    /// Spends `cost` tokens at `now(quota)`; `None` if the cell moved or its tenure ended.
    #[inline]
    fn spend(&self, cost: u32, now: &impl Fn(&Quota) -> u64) -> Option<Result<Allowed, Denied>> {
        self.bucket
            .spend(cost, now(&self.quota), &self.quota, self.tenure)
    }

    /// Books `cost` tokens at `now`, ready within `max_wait_ns`.
    fn book(&self, cost: u32, now: u64, max_wait_ns: u64) -> Option<Result<Booked, Denied>> {
        let quota = &self.quota;
        let max_wait_ns = gcra::max_wait_ns(max_wait_ns, quota);
        let given = self.ledger.snapshot();
        let booked = self.bucket.update(self.tenure, |tat| {
            let (new, booking) = gcra::reserve(tat, now, cost, max_wait_ns, quota)?;
            if new == MOVED {
                return Err(gcra::unrepresentable_at(tat, now, quota));
            }
            Ok((new, booking))
        });
        match booked {
            Ok((change, booking)) => Some(Ok((self.receipt(change, given, cost), booking))),
            Err(Some(denied)) => Some(Err(denied)),
            Err(None) => None,
        }
    }

    /// What a give-back of the booking `change` of `cost` tokens needs.
    fn receipt(&self, change: Change, given: u64, cost: u32) -> Receipt {
        Receipt {
            tenure: self.id,
            before: change.before,
            after: change.after,
            given,
            cost,
        }
    }

    /// Spends `tokens` more unconditionally at `now`; `None` if the cell moved.
    fn force(&self, tokens: u32, now: u64) -> Option<()> {
        let quota = &self.quota;
        let forced = self.bucket.update(self.tenure, |tat| {
            Ok::<_, ()>((gcra::force(tat, now, tokens, quota), ()))
        });
        (!matches!(forced, Err(None))).then_some(())
    }
}

/// A booking's receipt and what it booked.
pub(crate) type Booked = (Receipt, Booking);

#[derive(Debug)]
pub(crate) struct Cells {
    head: Head,
    spares: [Spare; 2],
    /// The id of the cell the last change moved to (the head while none did).
    live: AtomicU64,
    /// 1 while a change is made.
    changing: AtomicU64,
    /// This limiter's id ([`TatStore::origin`]).
    origin: u64,
}

impl Cells {
    /// One cell under `quota` at `tat`.
    pub(crate) fn new(quota: Quota, tat: u64) -> Cells {
        Cells {
            head: Head {
                bucket: Bucket::new(tat),
                quota,
                next: AtomicU64::new(HEAD),
                ledger: Ledger::new(),
            },
            spares: [Spare::new(quota), Spare::new(quota)],
            live: AtomicU64::new(HEAD),
            changing: AtomicU64::new(0),
            origin: crate::sync::next_id(),
        }
    }

    /// The head, which a check of a limiter that never changed decides on.
    #[inline]
    fn head(&self) -> View<'_> {
        View {
            id: HEAD,
            quota: self.head.quota,
            bucket: &self.head.bucket,
            tenure: Tenure::ONLY,
            ledger: &self.head.ledger,
        }
    }

    /// The cell `id` in its tenure, if the tenure is in force (or the head, whatever it holds).
    #[inline]
    fn view(&self, id: u64) -> Option<View<'_>> {
        if id == HEAD {
            return Some(self.head());
        }
        let spare = &self.spares[index(id) - 1];
        let v = version(id);
        let quota = spare.quota.read_at(&spare.version, v)?;
        Some(View {
            id,
            quota,
            bucket: &spare.bucket,
            tenure: Tenure {
                mask: mask(v),
                version: Some((&spare.version, v)),
            },
            ledger: &spare.ledger,
        })
    }

    /// The id of the cell the move of `id` went to, if `id` moved in its tenure; `None` if
    /// its tenure ended (look at `live` again) or it did not move.
    fn next_of(&self, id: u64) -> Option<u64> {
        if id == HEAD {
            // Acquire: read after the head's word was seen MOVED, whose fence (`on_live_then`)
            // made the change's store of `next`, made before the move, visible.
            return Some(self.head.next.load(Ordering::Acquire));
        }
        let spare = &self.spares[index(id) - 1];
        let v = version(id);
        let moved = spare.bucket.load_raw() ^ mask(v) == MOVED;
        // Acquire: the next id is read after MOVED was seen, and before the version check.
        let next = spare.next.load(Ordering::Acquire);
        // Relaxed: ordered after the Acquire load of `next`.
        (moved && spare.version.load(Ordering::Relaxed) == v).then_some(next)
    }

    #[inline]
    fn live_id(&self) -> u64 {
        // Acquire: pairs with the Release store in `change`.
        self.live.load(Ordering::Acquire)
    }

    /// The live cell's quota: the one the limiter enforces.
    pub(crate) fn quota(&self) -> Quota {
        self.on_live(|view| view.bucket.load(view.tenure).map(|_| view.quota))
    }

    /// The live cell's TAT and quota.
    pub(crate) fn tat(&self) -> (u64, Quota) {
        self.on_live(|view| Some((view.bucket.load(view.tenure)?, view.quota)))
    }

    /// Spends `cost` tokens from the live cell at `now(its quota)`, then calls `moved` with the
    /// decision if the head had moved, as a named limiter's has (docs/design.md §11).
    #[inline]
    pub(crate) fn spend_then(
        &self,
        cost: u32,
        now: impl Fn(&Quota) -> u64,
        moved: impl FnOnce(&Result<Allowed, Denied>),
    ) -> Result<Allowed, Denied> {
        // `move` closures, handed on by value: what they hold stays in registers, where
        // closures borrowing the caller's locals would make the hot path store them to
        // memory on every check for the cold path's sake.
        let mut moved = Some(moved);
        self.on_live_then(
            #[inline]
            move |view| view.spend(cost, &now),
            move |done| {
                if let Some(moved) = moved.take() {
                    moved(done)
                }
            },
        )
    }

    /// Moves the head to a spare under the same quota and TAT, unless it has moved already:
    /// from then on, every operation takes the moved path (see [`Cells::spend_then`]).
    #[cfg(feature = "std")]
    pub(crate) fn move_head(&self) {
        if self.head.bucket.load(Tenure::ONLY).is_some() {
            self.change(self.head.quota, |tat, _| tat);
        }
    }

    /// `op` on the live cell.
    #[inline]
    fn on_live<T>(&self, op: impl FnMut(&View<'_>) -> Option<T>) -> T {
        self.on_live_then(op, |_| ())
    }

    /// [`Cells::on_live`], calling `moved` with the answer when it came from the moved path.
    /// `op` answers `None` when the cell it was given has moved or its tenure ended.
    #[inline]
    fn on_live_then<T>(
        &self,
        mut op: impl FnMut(&View<'_>) -> Option<T>,
        moved: impl FnMut(&T),
    ) -> T {
        if let Some(done) = op(&self.head()) {
            return done;
        }
        self.on_moved(op, moved)
    }

    /// The rest of [`Cells::on_live_then`] once the head has moved. Out of line and cold, so
    /// that the head's call of `op` is the only one in the checks' code and is inlined there.
    #[cold]
    #[inline(never)]
    fn on_moved<T>(
        &self,
        mut op: impl FnMut(&View<'_>) -> Option<T>,
        mut moved: impl FnMut(&T),
    ) -> T {
        // Acquire: the head's word was seen MOVED by a Relaxed load (a head's loads order
        // nothing); this fence makes the writes of the change before its move visible here:
        // the head's `next`, and the quota and TAT of the cell it names.
        fence(Ordering::Acquire);
        let mut id = self.live_id();
        loop {
            if id == HEAD {
                // The head moved, but `live` does not name its successor yet.
                id = self.head.next.load(Ordering::Acquire);
            }
            if let Some(view) = self.view(id) {
                if let Some(done) = op(&view) {
                    moved(&done);
                    return done;
                }
            }
            // Moved: follow it; a tenure that ended: start again from `live`.
            id = self.next_of(id).unwrap_or_else(|| self.live_id());
        }
    }

    /// Whole tokens at `now(quota)` in the live cell.
    #[inline]
    pub(crate) fn available(&self, now: impl Fn(&Quota) -> u64) -> u32 {
        self.on_live(|view| {
            let tat = view.bucket.load(view.tenure)?;
            Some(gcra::available(tat, now(&view.quota), &view.quota))
        })
    }

    /// Moves the live cell to the spare that is not live, under `quota`, with the TAT
    /// `rebase(TAT, old quota)` for the live cell's TAT at the move. Changes are made one at a
    /// time; a check is never held up by one.
    pub(crate) fn change(&self, quota: Quota, rebase: impl Fn(u64, &Quota) -> u64) {
        let _lock = ChangeLock::take(&self.changing);
        self.change_locked(quota, rebase);
    }

    fn change_locked(&self, quota: Quota, rebase: impl Fn(u64, &Quota) -> u64) {
        // With the lock held `live` names the live cell, which has not moved: every change
        // stores `live` before it lets go of the lock.
        let from_id = self.live_id();
        let from = self.view(from_id).expect("the live cell is in its tenure");
        let to_index = if index(from_id) == 1 { 2 } else { 1 };
        let to = &self.spares[to_index - 1];
        // An operation of the old tenure that reads any write from here on sees the version
        // move, and starts again from `live`.
        let v = to.quota.write_at(&to.version, quota);
        let to_id = v << 2 | to_index as u64;
        // Relaxed: published with the Release write of MOVED below.
        from_next(self, from_id).store(to_id, Ordering::Relaxed);
        loop {
            let raw = from.bucket.load_raw();
            let tat = raw ^ from.tenure.mask;
            debug_assert_ne!(tat, MOVED, "only a change moves a cell, one at a time");
            // No operation of this tenure can reach `to` before `from` holds MOVED.
            to.bucket
                .reset(rebase(tat, &from.quota).min(LAST_TAT), mask(v));
            if from.bucket.mark_moved(raw, from.tenure.mask) {
                break;
            }
        }
        // Release: publishes the cell to operations that load `live`.
        self.live.store(to_id, Ordering::Release);
    }
}

/// The `next` word of the cell `id`.
fn from_next(cells: &Cells, id: u64) -> &AtomicU64 {
    if id == HEAD {
        &cells.head.next
    } else {
        &cells.spares[index(id) - 1].next
    }
}

/// The change lock, held while it lives.
struct ChangeLock<'a>(&'a AtomicU64);

impl<'a> ChangeLock<'a> {
    fn take(word: &'a AtomicU64) -> ChangeLock<'a> {
        // Acquire: the change sees the cells as the change before it left them.
        while word
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spin_wait();
        }
        ChangeLock(word)
    }
}

impl Drop for ChangeLock<'_> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire in `take`.
        self.0.store(0, Ordering::Release);
    }
}

/// A limiter's cells hold one bucket, the live cell's: a booking is made there (following
/// moves), a give-back goes to the tenure its receipt names, and a forced spend to the live
/// cell. The `id`, `quota` and `start_empty` of the trait are a keyed table's: a limiter's
/// cells have their own.
impl TatStore for Cells {
    fn origin(&self) -> u64 {
        self.origin
    }

    fn book(
        &self,
        _id: u64,
        cost: u32,
        now: u64,
        max_wait_ns: u64,
        _quota: &Quota,
        _start_empty: bool,
    ) -> Result<Booked, Denied> {
        self.on_live(|view| view.book(cost, now, max_wait_ns))
    }

    fn give_back(
        &self,
        _id: u64,
        receipt: &Receipt,
        tokens: u32,
        _quota: &Quota,
        now: &dyn Fn() -> u64,
    ) -> u64 {
        // A cell changed since the booking gives nothing: its TAT was rebased by a rule the
        // receipt knows nothing of.
        let Some(view) = self.view(receipt.tenure) else {
            return 0;
        };
        let word = view.bucket.in_tenure(view.tenure);
        give_back::give_back(&word, view.ledger, receipt, tokens, &view.quota, now)
    }

    fn force(
        &self,
        _id: u64,
        tokens: u32,
        now: u64,
        _quota: &Quota,
        _start_empty: bool,
    ) -> Result<(), Denied> {
        self.on_live(|view| view.force(tokens, now));
        Ok(())
    }

    fn tat(&self, _id: u64, _now: u64, _quota: &Quota, _start_empty: bool) -> u64 {
        Cells::tat(self).0
    }
}
