//! The fault-injection switch of the loom models (`loom_tests.rs`): which step of the protocol a
//! model's table deliberately breaks. Outside the models every question is a constant `false`.

/// Deliberately broken steps, one per loom model, which the models must catch.
#[cfg(all(test, loom))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Broken {
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
    /// Let a look-up that meets a claim of the key take the key for absent, instead of passing
    /// over the claim to the key's bucket further on.
    ClaimHidesBucket,
    /// Give a booking's tokens back to the key's bucket without checking that it is the
    /// bucket the booking was made in (the tenure of its receipt).
    GiveBackToAnyTenure,
    /// Let a new key of a table that starts keys empty remove a bucket that is not full (the
    /// one nearest to full), as a table that starts keys full does.
    EvictNotFullUnderStartEmpty,
    /// Remove an idle bucket without raising the table's floor, so that a new bucket starts
    /// full at any reading, also one earlier than the removal's.
    IgnoreFloor,
}

/// The broken step of one table, if any: none outside the loom models (a zero-sized value).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Faults {
    #[cfg(all(test, loom))]
    broken: Broken,
}

impl Faults {
    /// The real protocol.
    pub(crate) const NONE: Faults = Faults {
        #[cfg(all(test, loom))]
        broken: Broken::Nothing,
    };

    #[cfg(all(test, loom))]
    pub(crate) const fn new(broken: Broken) -> Faults {
        Faults { broken }
    }
}

/// One question per broken step (`Broken` says what each breaks): `true` only in the loom
/// twin that breaks it.
macro_rules! questions {
    ($($name:ident => $step:ident,)*) => {
        impl Faults {
            $(
                #[inline]
                pub(crate) fn $name(self) -> bool {
                    #[cfg(all(test, loom))]
                    return self.broken == Broken::$step;
                    #[cfg(not(all(test, loom)))]
                    false
                }
            )*
        }
    };
}

questions! {
    skips_rescan => SkipRescan,
    skips_init_recheck => InitWithoutRecheck,
    evicts_without_freeze => EvictWithoutFreeze,
    unmasked_tat => UnmaskedTat,
    skips_lookup_recheck => LookupWithoutRecheck,
    claim_hides_bucket => ClaimHidesBucket,
    skips_tenure_check => GiveBackToAnyTenure,
    evicts_not_full_under_start_empty => EvictNotFullUnderStartEmpty,
    ignores_floor => IgnoreFloor,
}
