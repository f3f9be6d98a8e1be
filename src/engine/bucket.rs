//! `Bucket`: one theoretical arrival time in an `AtomicU64`, updated by compare-and-swap. The
//! CAS loop and its orderings: docs/design.md §2; tenures of a reused word and [`MOVED`]: §10.

use crate::engine::gcra;
use crate::engine::give_back::TenureWord;
use crate::outcome::{Allowed, Denied};
use crate::quota::Quota;
use crate::sync::{AtomicU64, Ordering};
use crossbeam_utils::Backoff;

/// The TAT of a bucket that a quota change has moved elsewhere (docs/design.md §10). No
/// operation stores it: a spend that would is denied, other writes stop one nanosecond short.
pub(crate) const MOVED: u64 = u64::MAX;

/// The largest TAT a bucket stores.
pub(crate) const LAST_TAT: u64 = MOVED - 1;

/// One GCRA bucket: 8 bytes of state.
#[derive(Debug)]
pub(crate) struct Bucket {
    word: AtomicU64,
}

/// Which tenure of a [`Bucket`]'s word an operation acts in: the mask of its values, and the
/// version word whose value says the tenure still holds (`None`: a word that is never reused).
#[derive(Clone, Copy)]
pub(crate) struct Tenure<'a> {
    pub(crate) mask: u64,
    pub(crate) version: Option<(&'a AtomicU64, u64)>,
}

impl Tenure<'_> {
    /// The tenure of a word that is never reused: values unmasked, always valid.
    pub(crate) const ONLY: Tenure<'static> = Tenure {
        mask: 0,
        version: None,
    };

    /// Whether the tenure still holds. Called after each load of the word, which is `Acquire`
    /// on a reused word.
    #[inline]
    fn holds(&self) -> bool {
        match self.version {
            None => true,
            // Relaxed: ordered after the Acquire load of the word it validates.
            Some((version, expected)) => version.load(Ordering::Relaxed) == expected,
        }
    }

    /// The ordering of a load whose value [`holds`](Self::holds) then validates.
    #[inline]
    fn load_order(&self) -> Ordering {
        if self.version.is_some() {
            Ordering::Acquire
        } else {
            Ordering::Relaxed
        }
    }
}

/// A write that took effect: the TAT before and after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) before: u64,
    pub(crate) after: u64,
}

impl Bucket {
    /// A bucket whose theoretical arrival time is `tat` (0: full at every `now`), at most
    /// [`LAST_TAT`], stored unmasked.
    #[inline]
    pub(crate) fn new(tat: u64) -> Bucket {
        Bucket {
            word: AtomicU64::new(tat.min(LAST_TAT)),
        }
    }

    /// The CAS loop: applies `decide` to the TAT until its result (new TAT, answer) is stored;
    /// its error ends the loop unwritten (`Some`). A moved bucket, or one whose tenure ended,
    /// decides nothing: `Err(None)`. A result of [`MOVED`] is stored as [`LAST_TAT`].
    #[inline]
    pub(crate) fn update<T, E>(
        &self,
        tenure: Tenure<'_>,
        mut decide: impl FnMut(u64) -> Result<(u64, T), E>,
    ) -> Result<(Change, T), Option<E>> {
        let mut raw = self.word.load(tenure.load_order());
        let backoff = Backoff::new();
        loop {
            let current = raw ^ tenure.mask;
            if current == MOVED || !tenure.holds() {
                return Err(None);
            }
            let (new, answer) = decide(current).map_err(Some)?;
            let new = new.min(LAST_TAT);
            let change = Change {
                before: current,
                after: new,
            };
            if new == current {
                return Ok((change, answer)); // nothing to store (a peek)
            }
            match self.swap_raw(raw, new ^ tenure.mask, tenure) {
                Ok(()) => return Ok((change, answer)),
                Err(actual) => {
                    backoff.spin();
                    raw = actual;
                }
            }
        }
    }

    /// Spends `cost` tokens at `now` ([`gcra::spend`]); `None` if the bucket has moved or its
    /// tenure ended. [`Bucket::update`] written out for the hot path.
    #[inline]
    pub(crate) fn spend(
        &self,
        cost: u32,
        now: u64,
        quota: &Quota,
        tenure: Tenure<'_>,
    ) -> Option<Result<Allowed, Denied>> {
        let mut raw = self.word.load(tenure.load_order());
        let backoff = Backoff::new();
        loop {
            if !tenure.holds() {
                return None;
            }
            let current = raw ^ tenure.mask;
            // MOVED is looked for only where a decision from it can land: a spend of it is
            // beyond the clock, a refusal that can never pass, so the common refusal (one that
            // says when to retry) and every admission skip the comparison.
            let (new, allowed) = match gcra::spend_marked(current, now, cost, quota) {
                Ok(spent) => spent,
                Err(denied) if denied.can_pass() || current != MOVED => return Some(Err(denied)),
                Err(_) => return None,
            };
            if cost == 0 {
                // A peek: nothing to store.
                return (current != MOVED).then_some(Ok(allowed));
            }
            if new == MOVED {
                return Some(Err(gcra::unrepresentable_at(current, now, quota)));
            }
            match self.swap_raw(raw, new ^ tenure.mask, tenure) {
                Ok(()) => return Some(Ok(allowed)),
                Err(actual) => {
                    // Spinning briefly after a lost race keeps the losers off the contended
                    // line while the winner's write lands.
                    backoff.spin();
                    raw = actual;
                }
            }
        }
    }

    /// The raw word from `current` to `new`; on failure the value found.
    #[inline]
    fn swap_raw(&self, current: u64, new: u64, tenure: Tenure<'_>) -> Result<(), u64> {
        // Release: a give-back's Acquire load then sees every spend before it (design.md §2).
        // On failure the value found is loaded as a first load is.
        self.word
            .compare_exchange_weak(current, new, Ordering::Release, tenure.load_order())
            .map(|_| ())
    }

    /// The TAT in `tenure`; `None` if the bucket moved or the tenure ended.
    #[inline]
    pub(crate) fn load(&self, tenure: Tenure<'_>) -> Option<u64> {
        let tat = self.word.load(tenure.load_order()) ^ tenure.mask;
        (tat != MOVED && tenure.holds()).then_some(tat)
    }

    /// The raw word (masked), loaded with `Acquire`: for the quota change that moves it.
    #[inline]
    pub(crate) fn load_raw(&self) -> u64 {
        // Acquire: a change reads the TAT it carries over as a give-back would.
        self.word.load(Ordering::Acquire)
    }

    /// Leaves [`MOVED`] (masked) in the word if it still holds the raw `expected`.
    pub(crate) fn mark_moved(&self, expected: u64, mask: u64) -> bool {
        // Release on success: publishes the word it moved to; Relaxed on
        // failure: the change reads the word again.
        self.word
            .compare_exchange(expected, MOVED ^ mask, Ordering::Release, Ordering::Relaxed)
            .is_ok()
    }

    /// Sets the TAT of a quota change's target, which no operation can reach before the move.
    pub(crate) fn reset(&self, tat: u64, mask: u64) {
        // Relaxed: published by the Release write of MOVED in the word this one replaces.
        self.word.store(tat.min(LAST_TAT) ^ mask, Ordering::Relaxed);
    }

    /// This bucket in `tenure`, as a give-back acts on it.
    pub(crate) fn in_tenure<'a>(&'a self, tenure: Tenure<'a>) -> InTenure<'a> {
        InTenure {
            bucket: self,
            tenure,
        }
    }
}

/// A bucket in one tenure, as [`give_back`](crate::engine::give_back::give_back) acts on it.
pub(crate) struct InTenure<'a> {
    bucket: &'a Bucket,
    tenure: Tenure<'a>,
}

impl TenureWord for InTenure<'_> {
    fn load(&self) -> Option<u64> {
        // Acquire: a give-back reads a time no earlier than every spend it sees (design.md §2).
        let tat = self.bucket.word.load(Ordering::Acquire) ^ self.tenure.mask;
        (tat != MOVED && self.tenure.holds()).then_some(tat)
    }

    fn swap(&self, current: u64, new: u64) -> Result<(), Option<u64>> {
        let mask = self.tenure.mask;
        // Release on success, Acquire on failure: as `swap_raw` and `load`.
        match self.bucket.word.compare_exchange(
            current ^ mask,
            new.min(LAST_TAT) ^ mask,
            Ordering::Release,
            Ordering::Acquire,
        ) {
            Ok(_) => Ok(()),
            Err(raw) => {
                let found = raw ^ mask;
                Err((found != MOVED && self.tenure.holds()).then_some(found))
            }
        }
    }
}
