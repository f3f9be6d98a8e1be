//! One check as the table sees it: the request, what it answers, and the GCRA decision of a
//! request on a bucket's TAT.

use super::seen::Seen;
use super::slot::{tag_of, KeyWord, FROZEN};
use crate::engine::bucket::Change;
use crate::engine::gcra::{self, Booking};
use crate::outcome::Denied;
use crate::quota::Quota;
use crate::sync::{AtomicU64, Ordering};

/// One check: the key's fingerprint, the time, the cost, the quota, and whether a new bucket
/// of the key starts empty (its starting TAT is computed only on the insert path).
#[derive(Clone, Copy)]
pub(crate) struct Request<'q> {
    pub(crate) fp: u64,
    pub(crate) now: u64,
    pub(crate) cost: u32,
    pub(crate) quota: &'q Quota,
    /// Whether a new bucket of the key starts empty rather than full; see [`initial_tat`].
    pub(crate) start_empty: bool,
    /// How long the tokens may take to arrive: 0 for a check, more for a reservation.
    pub(crate) max_wait_ns: u64,
    /// Spend `cost` unconditionally (the extra cost of a settled booking), into debt if need
    /// be, rather than decide.
    pub(crate) force: bool,
}

/// What a request answers: on success the bucket's tenure (its K) and the TAT before and after
/// it (for give-backs) and the booking (its `allowed`, and when the tokens are there).
pub(crate) type Outcome = Result<(Spent, Booking), Denied>;

/// A write of a request: the tenure it was made in (the raw K; 0 for a request that stored
/// nothing) and the TAT before and after.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spent {
    pub(crate) tenure: u64,
    pub(crate) change: Change,
}

impl Spent {
    /// The same write, made in the tenure of the LIVE K `k`.
    #[inline]
    pub(super) fn in_tenure(self, k: KeyWord) -> Spent {
        Spent {
            tenure: k.raw(),
            ..self
        }
    }
}

impl<'q> Request<'q> {
    /// One token of the key of fingerprint `fp` at 0, ready now: the request of the table's
    /// unit tests.
    #[cfg(all(test, not(loom)))]
    pub(super) fn one_at_zero(fp: u64, quota: &'q Quota) -> Request<'q> {
        Request {
            fp,
            now: 0,
            cost: 1,
            quota,
            start_empty: false,
            max_wait_ns: 0,
            force: false,
        }
    }
}

/// The TAT a new bucket of the key of `req` starts from: empty at `req.now` under
/// `start_empty` unless `seen` holds the key, else full; never before `floor`, the latest time
/// at which the table removed a bucket as idle (docs/design.md §6.5, *Removed at one reading*).
#[inline]
pub(super) fn initial_of(seen: Option<&Seen>, floor: &AtomicU64, req: &Request<'_>) -> u64 {
    initial_of_fields(seen, floor, req.fp, req.start_empty, req.now, req.quota)
}

/// [`initial_of`] on the fields it reads, out of line and in registers: a request passed by
/// reference (or by value) would be written to memory on every check that might insert.
#[cold]
#[inline(never)]
fn initial_of_fields(
    seen: Option<&Seen>,
    floor: &AtomicU64,
    fp: u64,
    start_empty: bool,
    now: u64,
    quota: &Quota,
) -> u64 {
    let returning = seen.is_some_and(|seen| seen.holds(tag_of(fp)));
    // Relaxed: an insert reads the floor after it has seen the removed slot retired (a SeqCst
    // operation on K, after the raise): happens-before carries the raise (docs/design.md §6.5).
    let floor = floor.load(Ordering::Relaxed);
    initial_tat(start_empty && !returning, now, quota).max(floor)
}

/// The TAT of a key seen for the first time at `now`: 0 (full), or empty at `now`. Never one
/// of the two reserved markers (see [`slot`](super::slot)).
#[inline]
pub(crate) fn initial_tat(start_empty: bool, now: u64, quota: &Quota) -> u64 {
    if start_empty {
        gcra::empty_at(now, quota).min(FROZEN - 1)
    } else {
        0
    }
}

/// The decision of `req` on a bucket at `tat`: the TAT to store (unchanged on a denial or a
/// peek) and the answer; a TAT equal to a reserved marker is denied.
#[inline(always)] // BENCHMARKS.md, "Keyed, paired"
pub(super) fn decide(tat: u64, req: &Request<'_>) -> (u64, Outcome) {
    if req.force {
        return forced(tat, req.now, req.cost, req.quota);
    }
    match gcra::reserve(tat, req.now, req.cost, req.max_wait_ns, req.quota) {
        Ok((new, _)) if new >= FROZEN => {
            (tat, Err(gcra::unrepresentable_at(tat, req.now, req.quota)))
        }
        Ok((new, booking)) => (new, Ok((spent(tat, new), booking))),
        Err(denied) => (tat, Err(denied)),
    }
}

/// A write from `before` to `after`, its tenure to be filled in by the spend that stores it.
fn spent(before: u64, after: u64) -> Spent {
    Spent {
        tenure: 0,
        change: Change { before, after },
    }
}

/// The decision of a forced request: `cost` more tokens whatever the bucket holds, stopping
/// short of the reserved markers. Its fields in registers, for the reason of
/// [`initial_of_fields`].
#[cold]
#[inline(never)]
fn forced(tat: u64, now: u64, cost: u32, quota: &Quota) -> (u64, Outcome) {
    let new = gcra::force(tat, now, cost, quota).min(FROZEN - 1);
    let booking = Booking {
        ready_at: now,
        allowed: crate::outcome::Allowed::new(gcra::level(new.saturating_sub(now), quota)),
    };
    (new, Ok((spent(tat, new), booking)))
}
