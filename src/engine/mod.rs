//! The engine beneath the public types: the GCRA arithmetic (`gcra`), a bucket's atomic word
//! and its compare-and-swap loops (`bucket`), one bucket wherever its TAT lives (`bucket_ref`),
//! the give-back machinery (`give_back`), the cells a limiter's quota lives in and changes
//! through (`quota_cells`), and what a named limiter counts (`counting`, in the striped counters
//! of `tally`, whose lanes `lanes` gives out). The synchronisation shim that loom replaces is
//! `crate::sync`. Nothing here is public API; the design and the proofs are in docs/design.md.

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
