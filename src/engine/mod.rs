//! The engine beneath the public types: arithmetic, bucket words, give-backs, quota cells and
//! counting. Nothing here is public API; the design and the proofs are in docs/design.md.

pub(crate) mod bucket;
pub(crate) mod bucket_ref;
#[cfg(feature = "std")]
pub(crate) mod counting;
pub(crate) mod gcra;
pub(crate) mod give_back;
// Under loom no tally takes a lane: only the model of the lanes uses them.
#[cfg(all(feature = "std", any(not(loom), test)))]
pub(crate) mod lanes;
pub(crate) mod quota_cells;
#[cfg(feature = "std")]
pub(crate) mod tally;
