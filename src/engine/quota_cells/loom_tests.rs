//! The loom models of a [`Limiter`]'s bucket: spends (`bucket_tests.rs`), reservations and
//! their give-backs (`reservation_tests.rs`, `ledger_tests.rs`), all-or-nothing checks
//! (`all_of_tests.rs`) and quota changes (`set_quota_tests.rs`), on the cells of this module.
//! Every model drives times passed in (`at(now)`) or a `ManualClock`: loom cannot model time.
//!
//! Their twins break one step each: a compare-and-swap made of a load and a store (the real
//! code under [`racy`](crate::sync::test_faults::racy)), or one of the broken give-backs and
//! the change without its lock written out below, on the cells' private parts.

mod all_of_tests;
mod bucket_tests;
mod ledger_tests;
mod reservation_tests;
mod set_quota_tests;

use crate::clock::Clock;
use crate::engine::bucket::{InTenure, Tenure};
use crate::engine::give_back::{self, Ledger, TenureWord};
use crate::limiter::Limiter;
use crate::nanos::Nanos;
use crate::quota::Quota;
use crate::quota_change::QuotaChange;
use crate::reservation::Reservation;
use core::time::Duration;

/// The emission interval of most models, in ns.
const T: u64 = 10;

/// A quota of interval `interval_ns` and burst `burst`.
fn quota_of(interval_ns: u64, burst: u32) -> Quota {
    Quota::try_new(Duration::from_nanos(interval_ns), burst).unwrap()
}

/// The TAT of `limiter`'s live cell.
fn tat<C: Clock>(limiter: &Limiter<C>) -> u64 {
    limiter.cells.tat().0
}

/// A give-back with one step broken, each caught by a model.
#[derive(Clone, Copy)]
enum BrokenGiveBack {
    /// Back to the TAT before the booking whenever the TAT equals the one it left: a value
    /// comparison, which a give-back and a spend in between can fool (ABA).
    ByValue,
    /// The rule, with the credit entered in the ledger as completed before the
    /// compare-and-swap (and taken out again after it) instead of after it.
    CompletedFirst,
    /// The rule, on the cell that is live now instead of the tenure the receipt names.
    OnLiveCell,
}

/// Gives `booked`'s tokens back by the broken rule `how`, at `at` or at the limiter's time
/// read after each load (as a cancel does).
fn cancel_broken<C: Clock>(
    limiter: &Limiter<C>,
    booked: Reservation<'_, C>,
    how: BrokenGiveBack,
    at: Option<Nanos>,
) {
    let (receipt, tokens) = (booked.receipt(), booked.cost());
    let bucket = limiter.bucket_ref();
    let now = || bucket.time(at).as_u64();
    let cells = &limiter.cells;
    match how {
        BrokenGiveBack::ByValue => {
            let give = u64::from(tokens) * cells.head.quota.emission_interval_ns();
            let _ = cells.head.bucket.update(Tenure::ONLY, |tat| {
                if tat == receipt.after {
                    Ok((tat.saturating_sub(give), ()))
                } else {
                    Err(())
                }
            });
        }
        BrokenGiveBack::CompletedFirst => {
            if let Some(view) = cells.view(receipt.tenure) {
                let word = CompletingFirst {
                    word: view.bucket.in_tenure(view.tenure),
                    ledger: view.ledger,
                };
                give_back::give_back(&word, view.ledger, &receipt, tokens, &view.quota, &now);
            }
        }
        BrokenGiveBack::OnLiveCell => {
            cells.on_live(|view| {
                view.bucket.load(view.tenure)?; // moved: on to the live cell
                let word = view.bucket.in_tenure(view.tenure);
                let ledger = view.ledger;
                Some(give_back::give_back(
                    &word,
                    ledger,
                    &receipt,
                    tokens,
                    &view.quota,
                    &now,
                ))
            });
        }
    }
}

/// The word of [`BrokenGiveBack::CompletedFirst`]: each compare-and-swap enters the credit it
/// gives in `ledger` as completed just before it, and takes it out again just after (the
/// give-back then enters it after a success, as it should): a booking that reads the ledger in
/// between counts a credit that lands only after its own spend.
struct CompletingFirst<'a> {
    word: InTenure<'a>,
    ledger: &'a Ledger,
}

impl TenureWord for CompletingFirst<'_> {
    fn load(&self) -> Option<u64> {
        self.word.load()
    }

    fn swap(&self, current: u64, new: u64) -> Result<(), Option<u64>> {
        // A give-back only lowers the TAT.
        let credit = current - new;
        self.ledger.complete(credit);
        let swapped = self.word.swap(current, new);
        // The ledger's totals wrap: adding the negation takes the credit out again.
        self.ledger.complete(credit.wrapping_neg());
        swapped
    }
}

/// [`Limiter::set_quota`] at `now` without the change lock: the broken twin of a change, so
/// that two changes can write the same spare at once and publish `live` out of order.
fn set_quota_without_the_lock<C: Clock>(
    limiter: &Limiter<C>,
    quota: Quota,
    how: QuotaChange,
    now: Nanos,
) {
    let now = now.as_u64();
    limiter
        .cells
        .change_locked(quota, |tat, old| how.rebase(tat, now, old, &quota));
}
