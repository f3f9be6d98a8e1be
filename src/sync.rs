//! The one place that names atomic types.
//!
//! Under `cfg(loom)` the atomics are loom's, so that the models in `loom-tests/` explore every
//! interleaving of the real code. With the `portable-atomic` feature the 64-bit atomics come
//! from portable-atomic (for targets without native 64-bit compare-and-swap). Otherwise they are
//! `core`'s. No other module names an atomic type directly; statistics counters take theirs
//! from [`counter`].
//!
//! `AtomicU128` (one slot of the keyed table) always comes from portable-atomic, since
//! `core::sync::atomic::AtomicU128` is not stable. It is lock-free where the CPU has a 16-byte
//! compare-and-swap: x86_64 with `cmpxchg16b` (detected at run time; the loads use an AVX
//! `vmovdqa` when AVX is present), aarch64, riscv64 with `zacas`, powerpc64 with quadword
//! atomics, s390x. Elsewhere portable-atomic falls back to global locks (its `fallback` feature),
//! and `KeyedLimiter` is then correct but not lock-free.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};

#[cfg(all(not(loom), feature = "portable-atomic"))]
pub(crate) use portable_atomic::{AtomicU64, Ordering};

#[cfg(all(not(loom), not(feature = "portable-atomic")))]
pub(crate) use core::sync::atomic::{AtomicU64, Ordering};

// The keyed limiter's statistics (src/keyed/stats.rs) take their atomics directly: they are
// not part of any protocol, so the loom models do not interleave them.

#[cfg(all(not(loom), feature = "std"))]
pub(crate) use portable_atomic::AtomicU128;

#[cfg(all(loom, feature = "std"))]
pub(crate) use loom_u128::AtomicU128;

/// A linearizable stand-in for a 128-bit atomic under loom, which has none: one value behind a
/// `loom::sync::Mutex`. Every operation takes the mutex, so all operations on one word are
/// totally ordered and each is one step that loom can interleave with the others.
///
/// Because a mutex orders everything, this stand-in behaves as if every access were `SeqCst`;
/// the models therefore check the protocol under sequential consistency, and the orderings the
/// real code uses are argued in its comments rather than checked by loom.
#[cfg(all(loom, feature = "std"))]
mod loom_u128 {
    use super::Ordering;
    use loom::sync::Mutex;

    #[derive(Debug)]
    pub(crate) struct AtomicU128 {
        value: Mutex<u128>,
    }

    impl AtomicU128 {
        pub(crate) fn new(value: u128) -> AtomicU128 {
            AtomicU128 {
                value: Mutex::new(value),
            }
        }

        pub(crate) fn load(&self, _: Ordering) -> u128 {
            *self.value.lock().unwrap()
        }

        pub(crate) fn store(&self, value: u128, _: Ordering) {
            *self.value.lock().unwrap() = value;
        }

        pub(crate) fn compare_exchange(
            &self,
            current: u128,
            new: u128,
            _: Ordering,
            _: Ordering,
        ) -> Result<u128, u128> {
            let mut value = self.value.lock().unwrap();
            if *value == current {
                *value = new;
                Ok(current)
            } else {
                Err(*value)
            }
        }

        /// A deliberately broken compare-and-swap that compares only the low (TAT) half and
        /// keeps the high (fingerprint) half, as a table with separate key and TAT words
        /// would. Only for the loom model that must catch it.
        pub(crate) fn compare_exchange_tat_only(&self, tat: u64, new_tat: u64) -> Result<(), ()> {
            let mut value = self.value.lock().unwrap();
            if *value as u64 == tat {
                *value = (*value >> 64 << 64) | u128::from(new_tat);
                Ok(())
            } else {
                Err(())
            }
        }
    }
}

/// Atomics for statistics counters (the keyed limiter's, the Redis limiter's) and for
/// [`CachedClock`](crate::CachedClock)'s reading: always the real ones, also under loom. They
/// order nothing and take no part in any protocol, so the models need not interleave them
/// (which would multiply their state space).
#[cfg(feature = "std")]
pub(crate) mod counter {
    #[cfg(not(feature = "portable-atomic"))]
    pub(crate) use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    #[cfg(feature = "portable-atomic")]
    pub(crate) use portable_atomic::{AtomicU64, AtomicUsize, Ordering};
}
