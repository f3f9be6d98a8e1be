//! The engine beneath the public types: the GCRA arithmetic (`gcra`), a bucket's atomic word
//! and its compare-and-swap loops (`bucket`), one bucket wherever its TAT lives (`bucket_ref`),
//! the give-back machinery (`give_back`), the cells a limiter's quota lives in and changes
//! through (`quota_cells`), the striped counters of named limiters (`tally`), and the
//! synchronisation shim that loom replaces (`sync`). Nothing here is public API; the design
//! and the proofs are in docs/design.md.

pub(crate) mod bucket;
pub(crate) mod bucket_ref;
pub(crate) mod gcra;
pub(crate) mod give_back;
pub(crate) mod quota_cells;
pub(crate) mod sync;
#[cfg(feature = "std")]
pub(crate) mod tally;
