//! Giving tokens back (a cancel, a settle below the cost, an `all_of` rollback, a paced item
//! never handed on): never more than the booking still holds. The rule, the [`Ledger`] and the
//! proof: docs/design.md §5, *Give-backs*.

use crate::engine::gcra;
use crate::quota::Quota;
use crate::sync::{spin_wait, AtomicU64, Ordering};

/// What a give-back needs to know of the booking it undoes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// Which tenure of which bucket the booking was made in (a keyed slot's key word, a
    /// limiter cell's id): a give-back to another tenure gives nothing.
    pub(crate) tenure: u64,
    /// The TAT before the booking's spend, and the TAT it left.
    pub(crate) before: u64,
    pub(crate) after: u64,
    pub(crate) cost: u32,
    /// The bucket's [`Ledger::snapshot`] taken before the spend.
    pub(crate) given: u64,
}

/// The credit given back to one bucket (or a stripe of a keyed table's buckets): two running
/// totals in nanoseconds, wrapping (docs/design.md §5, *The ledger*).
#[derive(Debug)]
pub(crate) struct Ledger {
    announced: AtomicU64,
    completed: AtomicU64,
    /// 1 while a give-back (or a keyed rewrite) of one of the ledger's buckets is made.
    held: AtomicU64,
}

/// While it lives, no other give-back of the ledger's buckets is made ([`Ledger::hold`]).
pub(crate) struct Hold<'a>(&'a AtomicU64);

impl Ledger {
    pub(crate) fn new() -> Ledger {
        Ledger {
            announced: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            held: AtomicU64::new(0),
        }
    }

    /// Waits until no other give-back of the ledger's buckets is being made, and keeps the
    /// others waiting until the hold is dropped: why (ABA on the TAT), docs/design.md §5, *One
    /// give-back at a time*. Checks and bookings never take it.
    pub(crate) fn hold(&self) -> Hold<'_> {
        // Acquire: this give-back reads the ledger and the TAT as the one before it left them.
        while self
            .held
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spin_wait();
        }
        Hold(&self.held)
    }

    /// What a booking records before its spend.
    #[inline]
    pub(crate) fn snapshot(&self) -> u64 {
        // Acquire: pairs with the Release in `complete`, so that a give-back counted here
        // wrote the TAT before this booking's spend reads it.
        self.completed.load(Ordering::Acquire)
    }

    /// How far the give-backs since `snapshot` can have moved a booking, read after the
    /// give-back's Acquire load of the TAT.
    #[inline]
    fn shift_since(&self, snapshot: u64) -> u64 {
        // Relaxed: ordered by the caller's Acquire load of the TAT, which synchronizes with
        // the Release compare-and-swap of every give-back whose write it reads or follows, and
        // each of those announced itself before that compare-and-swap.
        self.announced
            .load(Ordering::Relaxed)
            .wrapping_sub(snapshot)
    }

    /// Announces `credit` about to be given back, before the compare-and-swap that gives it.
    pub(crate) fn announce(&self, credit: u64) {
        // Relaxed: published by the Release compare-and-swap of the TAT that follows.
        self.announced.fetch_add(credit, Ordering::Relaxed);
    }

    /// Withdraws an announcement whose compare-and-swap did not happen.
    pub(crate) fn retract(&self, credit: u64) {
        // Relaxed: an announcement withdrawn only makes later bounds tighter.
        self.announced.fetch_sub(credit, Ordering::Relaxed);
    }

    /// Enters `credit` given back, after the compare-and-swap that gave it.
    pub(crate) fn complete(&self, credit: u64) {
        // Release: pairs with the Acquire in `snapshot`.
        self.completed.fetch_add(credit, Ordering::Release);
    }
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire in `hold`.
        self.0.store(0, Ordering::Release);
    }
}

/// One tenure of a bucket's word, as a give-back acts on it.
pub(crate) trait TenureWord {
    /// The TAT, if the tenure still holds, loaded with `Acquire` (see [`Ledger`]).
    fn load(&self) -> Option<u64>;

    /// The TAT from `current` to `new` (`Release` on success, `Acquire` on failure); on
    /// failure the TAT found, or `None` if the tenure ended.
    fn swap(&self, current: u64, new: u64) -> Result<(), Option<u64>>;
}

/// The TAT of a bucket that the booking `receipt` left as it is, without `tokens` of the
/// booking: the TAT before it for all of them, else the booking's end less the tokens given
/// back (the last ones booked).
fn exactly_without(receipt: &Receipt, tokens: u32, quota: &Quota) -> u64 {
    if tokens >= receipt.cost {
        return receipt.before;
    }
    let credit = u64::from(tokens) * quota.emission_interval_ns();
    receipt.after - credit
}

/// Gives back `tokens` of the booking `receipt` to `word` under `quota` (the booking's), at a
/// time read by `now` after each load of the TAT (no earlier than any spend the load saw).
/// Returns the credit given back, in nanoseconds.
pub(crate) fn give_back(
    word: &impl TenureWord,
    ledger: &Ledger,
    receipt: &Receipt,
    tokens: u32,
    quota: &Quota,
    now: &dyn Fn() -> u64,
) -> u64 {
    let _hold = ledger.hold();
    let Some(mut tat) = word.load() else {
        return 0;
    };
    loop {
        let now = now();
        let shift = ledger.shift_since(receipt.given);
        let top = receipt.after.saturating_sub(shift);
        let new = if shift == 0 && tat == receipt.after {
            // Nothing was given back since, and whatever came after the booking has been given
            // back in full: the bucket is as the booking left it, and goes back exactly to
            // what it was without the tokens given back.
            Some(exactly_without(receipt, tokens, quota)).filter(|&new| new != tat)
        } else {
            gcra::give_back(tat, now, top, tokens, quota)
        };
        let Some(new) = new else {
            return 0;
        };
        let credit = tat - new;
        // A booking on top of the bucket moves no other: no need to enter it.
        let counted = tat != top;
        if counted {
            ledger.announce(credit);
        }
        match word.swap(tat, new) {
            Ok(()) => {
                if counted {
                    ledger.complete(credit);
                }
                return credit;
            }
            Err(found) => {
                if counted {
                    ledger.retract(credit);
                }
                match found {
                    Some(found) => tat = found,
                    None => return 0,
                }
            }
        }
    }
}
