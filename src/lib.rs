//! Lock-free GCRA rate limiting: one `AtomicU64` per bucket, exact token-bucket semantics.
//!
//! ```
//! use cellrate::{Limiter, Quota};
//!
//! // 100 requests per second, up to 10 at once.
//! let limiter = Limiter::new(Quota::per_second(100).with_burst(10));
//! match limiter.check() {
//!     Ok(allowed) => println!("go ahead; {} left", allowed.remaining()),
//!     Err(denied) => println!("429; retry after {:?}", denied.retry_after()),
//! }
//! ```
//!
//! # Which type for which job
//! | Job | Type |
//! |---|---|
//! | A rate: an interval per token and a burst | [`Quota`] (`per_second(100).with_burst(10)`) |
//! | One limit for everything | [`Limiter`]: `check`, `check_n`; `at(now)` for a time passed in |
//! | A limit per key (user, IP, API key) | [`KeyedLimiter`], built by [`KeyedLimiterBuilder`]; `check_key`, or a key's handle [`KeyedBucket`] (`limiter.key(&k)`) with a limiter's verbs |
//! | The answer of a check | [`Allowed`] (spent) or [`Denied`] (nothing spent, `retry_after`) |
//! | Book now, go later, cancel if not needed | [`Reservation`] (`reserve`), its [`Ticket`] |
//! | Wait for tokens | `wait` (blocking) and `until_ready` (feature `async`) on a limiter, a handle or a reservation |
//! | Several limits, all or nothing | [`all_of`] → [`AllOf`] over [`Limit`]s |
//! | Pace a stream, sink or writer | `pace::PaceExt` (feature `async`) |
//! | Change a quota live | `set_quota`, the rules in [`QuotaChange`] |
//! | Time | [`Clock`]: [`TickClock`] (the default), [`MonotonicClock`], [`ManualClock`] (tests), `QuantaClock` (feature `quanta`); [`Nanos`] |
//! | Counts | `named("api")` then `stats()`: [`Stats`], [`KeyedStats`] |
//!
//! # The model
//! A bucket is a token bucket of capacity `burst` that earns one token per
//! `emission_interval`, stored as one number, the theoretical arrival time (TAT): the instant
//! at which it will be full again. Every figure is an integer number of nanoseconds and every
//! sum and product is checked, so:
//!
//! - the decisions, `remaining`, `retry_after` and `reset_after` are exactly those of a token
//!   bucket that keeps its level in nanoseconds of credit;
//! - on an exact clock a denied request would pass at exactly `now + retry_after`, not one
//!   nanosecond sooner (on a reading that may lag, see [`Denied::retry_after`]);
//! - `cost == 0` is a peek; `cost > burst` is denied with no retry time;
//! - a stale `now` never grants tokens, and an overflow is a denial, never a wrap.
//!
//! The arithmetic, the protocols and their proofs are in docs/design.md.
//!
//! ```
//! use cellrate::{Limiter, ManualClock, Quota};
//!
//! let clock = ManualClock::new();
//! let limiter = Limiter::with_clock(Quota::per_second(10).with_burst(1), clock.clone());
//! assert!(limiter.check().is_ok());
//! let wait = limiter.check().unwrap_err().retry_after().unwrap();
//! clock.advance(wait - std::time::Duration::from_nanos(1));
//! assert!(limiter.check().is_err()); // one nanosecond early
//! clock.advance(std::time::Duration::from_nanos(1));
//! assert!(limiter.check().is_ok()); // exactly on time
//! ```
//!
//! A limiter orders nothing for its users: do not use an `Allowed` as a signal that another
//! thread's writes are visible.
//!
//! # Counting
//! `named("api")` opts a limiter in to counting its decisions, which `stats()` returns; an
//! unnamed limiter's check pays nothing for counts. With the `metrics` feature,
//! `publish_metrics()` hands them to the `metrics` facade, labelled by the name (never a key).
//!
//! ```
//! use cellrate::{Limiter, ManualClock, Quota};
//!
//! let unnamed = Limiter::with_clock(Quota::per_second(1), ManualClock::new());
//! let _ = (unnamed.check(), unnamed.check());
//! assert_eq!(unnamed.stats(), Default::default());
//! ```
//!
//! # Features
//! - `std` (default): [`TickClock`], [`MonotonicClock`], `Limiter::new`, the waits,
//!   [`KeyedLimiter`] and naming. Without it the crate is `no_std` with `alloc`:
//!   [`Limiter::with_clock`], reservations, [`all_of`] and quota changes remain.
//! - `async`: `until_ready`, an executor-independent async wait, and `pace`.
//! - `quanta`: `QuantaClock`, an exact clock read from the CPU's timestamp counter.
//! - `metrics`: `publish_metrics()` on named limiters, and the histogram of their waits.
//! - `portable-atomic`: for targets without native 64-bit compare-and-swap.
//!
//! # Companion crates
//! - `cellrate-http`: a tower layer for axum, hyper and tonic, with `Retry-After` and the
//!   `RateLimit` headers.
//! - `cellrate-redis`: buckets kept in Redis and shared by many servers, with the same
//!   decisions.
#![cfg_attr(not(any(feature = "std", loom)), no_std)]
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate alloc;

// The replay oracle (`tests/oracle`), which the crate's own tests share, names the crate.
#[cfg(all(test, not(loom)))]
extern crate self as cellrate;

mod all_of;
mod at;
mod clock;
mod engine;
#[cfg(feature = "metrics")]
mod export;
// Its branches are the keyed table's, which needs `std`.
#[cfg(feature = "std")]
mod hint;
#[cfg(feature = "std")]
mod keyed;
mod limiter;
#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(feature = "std")]
mod named;
mod nanos;
mod outcome;
mod quota;
mod quota_change;
mod reservation;
mod set_quota;
mod stats;
mod sync;
#[cfg(feature = "std")]
mod wait;

#[cfg(feature = "async")]
pub mod pace;

pub use all_of::{all_of, AllOf, Limit};
pub use at::At;
#[cfg(feature = "quanta")]
pub use clock::quanta_clock::QuantaClock;
#[cfg(feature = "std")]
pub use clock::tick_clock::TickClock;
#[cfg(feature = "std")]
pub use clock::MonotonicClock;
pub use clock::{Clock, ManualClock};
#[cfg(feature = "std")]
pub use engine::tally::StripedCounts;
#[cfg(feature = "std")]
pub use keyed::{
    FingerprintHash, KeyedBucket, KeyedBuildError, KeyedLimiter, KeyedLimiterBuilder,
    OverflowPolicy, DEFAULT_MAX_KEYS,
};
pub use limiter::Limiter;
pub use nanos::Nanos;
pub use outcome::{Allowed, Denied};
pub use quota::{Quota, QuotaError};
pub use quota_change::QuotaChange;
pub use reservation::{Reservation, Ticket};
pub use stats::{KeyedStats, Stats};

/// The README's examples, compiled and run as doc tests so that they cannot drift from the API.
#[cfg(all(doctest, feature = "std"))]
#[doc = include_str!("../README.md")]
mod readme {}
