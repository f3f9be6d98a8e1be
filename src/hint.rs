//! A branch hint that builds on the crate's minimum Rust version.

/// Marks the branch that calls it as rarely taken, so that the compiler lays the common path
/// out as one run of instructions and moves this branch aside: a check then touches fewer
/// cache lines of code. A call of an empty `#[cold]` function that is never inlined is what
/// the compiler's branch weights recognise (`core::hint::cold_path` does the same from Rust
/// 1.95); the call costs a few cycles on the rare branch only.
#[cold]
#[inline(never)]
pub(crate) fn cold_path() {}
