//! Hooks for the loom models (`loom-tests/`): tiny tables, raw inspection, and the broken
//! twins. Compiled only under `--cfg loom`.

use super::builder::KeyedLimiterBuilder;
use super::KeyedLimiter;
use crate::clock::Clock;
use crate::quota::Quota;
use core::borrow::Borrow;
use core::hash::Hash;

impl<K: Hash + Eq, C: Clock> KeyedLimiter<K, C> {
    /// A limiter whose table has exactly `slots` slots searched `window` from home, with one
    /// step deliberately broken (or none).
    #[doc(hidden)]
    pub fn loom_tiny(quota: Quota, clock: C, slots: usize, window: usize, broken: Broken) -> Self {
        let mut limiter = KeyedLimiterBuilder::new(quota)
            .clock(clock)
            .build_tiny(slots, window);
        limiter.table.broken = broken;
        limiter
    }

    /// How many slots hold a bucket or a claim of `key`.
    #[doc(hidden)]
    pub fn loom_slots_holding<Q: Hash + ?Sized>(&self, key: &Q) -> usize
    where
        K: Borrow<Q>,
    {
        self.table.slots_holding(self.fingerprint(key))
    }

    /// The home slot of `key`, so that a model can choose keys that share a window.
    #[doc(hidden)]
    pub fn loom_home<Q: Hash + ?Sized>(&self, key: &Q) -> usize
    where
        K: Borrow<Q>,
    {
        self.table.home(self.fingerprint(key))
    }
}

/// Deliberately broken steps, one per loom model, which the models must catch.
#[cfg(loom)]
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broken {
    /// The real protocol.
    Nothing,
    /// Make a claim LIVE without rescanning the window for another slot of the key.
    SkipRescan,
    /// Initialise W of a claim without checking after reading W that K is still the claim.
    InitWithoutRecheck,
    /// Remove an idle bucket by changing K alone, without freezing W first.
    EvictWithoutFreeze,
    /// Store the TAT in W unmasked, so that two tenures can write equal values.
    UnmaskedTat,
    /// Look a key up by reading W without reading K again after it, so that W may be of
    /// another tenure than the K read before it.
    LookupWithoutRecheck,
}
