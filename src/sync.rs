//! The one place that names atomic types.
//!
//! Under `cfg(loom)` the atomics are loom's, so that the models in `loom-tests/` explore every
//! interleaving of the real code. With the `portable-atomic` feature they come from
//! portable-atomic (for targets without native 64-bit compare-and-swap). Otherwise they are
//! `core`'s. No other module names an atomic type directly.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};

#[cfg(all(not(loom), feature = "portable-atomic"))]
pub(crate) use portable_atomic::{AtomicU64, Ordering};

#[cfg(all(not(loom), not(feature = "portable-atomic")))]
pub(crate) use core::sync::atomic::{AtomicU64, Ordering};
