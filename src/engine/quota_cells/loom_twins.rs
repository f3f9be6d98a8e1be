//! The broken twins of [`Cells`] that the loom models (`loom-tests/`) must catch: changes
//! without the lock or without the compare-and-swap, and give-backs with one step broken.
//! Only under `cfg(loom)`.

use super::{Cells, ChangeLock};
use crate::engine::bucket::{Bucket, InTenure, RacyInTenure, Tenure};
use crate::engine::give_back::{self, GiveBackFault, Ledger, Receipt, TenureWord};
use crate::quota::Quota;

impl Cells {
    /// Deliberately broken [`Cells::change`]: no change lock, so two changes can write the same
    /// spare at once and publish `live` out of order. Only for the loom models.
    pub(crate) fn change_unlocked(&self, quota: Quota, rebase: impl Fn(u64, &Quota) -> u64) {
        self.change_locked::<false>(quota, rebase);
    }

    /// Deliberately broken [`Cells::change`]: loads the TAT, rebases it and stores MOVED with
    /// no compare-and-swap, so an operation that lands in between is lost. Only for the loom
    /// models.
    pub(crate) fn change_racy(&self, quota: Quota, rebase: impl Fn(u64, &Quota) -> u64) {
        let _lock = ChangeLock::take(&self.changing);
        self.change_locked::<true>(quota, rebase);
    }

    /// The head's TAT, for the broken twins of the loom models.
    pub(crate) fn head_bucket(&self) -> (&Bucket, &Quota) {
        (&self.head.bucket, &self.head.quota)
    }

    /// [`TatStore::give_back`](crate::engine::bucket_ref::TatStore::give_back) with the step `fault`
    /// broken (see [`GiveBackFault`]).
    pub(super) fn give_back_with_fault(
        &self,
        receipt: &Receipt,
        tokens: u32,
        now: &dyn Fn() -> u64,
        fault: GiveBackFault,
    ) -> u64 {
        match fault {
            GiveBackFault::ByValue => {
                let (bucket, quota) = self.head_bucket();
                let give = u64::from(tokens) * quota.emission_interval_ns();
                let given = bucket.update(Tenure::ONLY, |tat| {
                    if tat == receipt.after {
                        Ok((tat.saturating_sub(give), ()))
                    } else {
                        Err(())
                    }
                });
                given.map_or(0, |(change, ())| change.before - change.after)
            }
            GiveBackFault::LoadStore => {
                let head = self.head();
                let word = RacyInTenure(head.bucket.in_tenure(head.tenure));
                give_back::give_back(&word, head.ledger, receipt, tokens, &head.quota, now)
            }
            GiveBackFault::CompletedFirst => {
                let Some(view) = self.view(receipt.tenure) else {
                    return 0;
                };
                let word = CompletingFirst {
                    word: view.bucket.in_tenure(view.tenure),
                    ledger: view.ledger,
                };
                give_back::give_back(&word, view.ledger, receipt, tokens, &view.quota, now)
            }
            GiveBackFault::OnLiveCell => self.on_live(|view| {
                view.bucket.load(view.tenure)?; // moved: on to the live cell
                let word = view.bucket.in_tenure(view.tenure);
                let credit =
                    give_back::give_back(&word, view.ledger, receipt, tokens, &view.quota, now);
                Some(credit)
            }),
        }
    }
}

/// Deliberately broken word: each compare-and-swap enters the credit it gives in `ledger` as
/// completed just before it, and takes it out again just after (the give-back then enters it
/// after a success, as it should): a booking that reads the ledger in between counts a credit
/// that lands only after its own spend.
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
        self.ledger.withdraw(credit);
        swapped
    }
}
