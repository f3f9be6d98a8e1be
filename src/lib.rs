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
//! | One limit for everything | [`Limiter`]: `check`, `check_n`, `check_at` |
//! | A limit per key (user, IP, API key) | [`KeyedLimiter`], built by [`KeyedLimiterBuilder`]; `check_key`, or a key's handle [`KeyedBucket`] (`limiter.key(&k)`) with a limiter's verbs |
//! | The answer of a check | [`Allowed`] (spent) or [`Denied`] (nothing spent, `retry_after`) |
//! | Book now, go later, cancel if not needed | [`Reservation`] (`reserve_n`), its [`Ticket`] |
//! | Wait for tokens | `wait` (blocking) and `until_ready` (feature `async`) on a limiter, a handle or a reservation |
//! | Several limits, all or nothing | [`all_of`] → [`AllOf`] over [`Limit`]s |
//! | Pace a stream, sink or writer | `pace::PaceExt` (feature `async`) |
//! | Change a quota live | `set_quota`, the rules in [`QuotaChange`] |
//! | Time | [`Clock`]: [`TickClock`] (the default), [`MonotonicClock`], [`ManualClock`] (tests), `QuantaClock` (feature `quanta`); [`Nanos`] |
//! | Counts | `named("api")` then `stats()`: [`Stats`], [`KeyedStats`] |
//!
//! HTTP and gRPC servers: the `cellrate-http` crate (a tower layer). Buckets shared by
//! processes through Redis: the `cellrate-redis` crate.
//!
//! # The model
//! A bucket is a token bucket of capacity `burst` that earns one token per
//! `emission_interval`. It is stored as one number, the theoretical arrival time (TAT): the
//! instant at which the bucket will be full again. Spending `c` tokens at `now` moves the TAT
//! to `max(TAT, now) + c * T` and is allowed iff that is at most `burst * T` ahead of `now`.
//! Every figure is an integer number of nanoseconds and every sum and product is checked, so:
//!
//! - the decisions, `remaining`, `retry_after` and `reset_after` are exactly those of a token
//!   bucket that keeps its level in nanoseconds of credit
//!   (the tests replay what a limiter carried out through one, on random schedules);
//! - on an exact clock ([`MonotonicClock`], [`ManualClock`], `QuantaClock`, or times passed to
//!   the `_at` forms) a denied request would pass at exactly `now + retry_after`, and not one
//!   nanosecond sooner. On a reading that may lag (the default [`TickClock`] for quotas at
//!   least 16 ms deep) `retry_after` also holds the clock's declared lag
//!   ([`Clock::lag_within`]: two ticks, 2 ms, on [`TickClock`]), so that a retry made
//!   `retry_after` later passes although that reading may lag more than the one refused;
//! - `cost == 0` is a peek; `cost > burst` is denied with no retry time;
//! - a stale `now` never grants tokens, and an overflow is a denial, never a wrap.
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
//! # Atomic orderings
//! A limiter orders nothing for its users: do not use an `Allowed` as a signal that another
//! thread's writes are visible. Which orderings each protocol uses, and why, is in
//! docs/design.md (sections 2, 6.3 and 10).
//!
//! # Counting
//! `named("api")` (on [`Limiter`] and [`KeyedLimiter`]) opts a limiter in to counting its
//! decisions, which `stats()` returns ([`Stats`]; [`KeyedStats`] for a keyed limiter, which
//! also holds the table's figures, kept whether or not it is named). An unnamed limiter counts
//! no decision (its `stats()` decisions stay 0): an unnamed [`Limiter`]'s check tests
//! nothing for counting, and a keyed one's tests one field. A named one counts in a line per
//! thread, so that threads checking one hot limiter do not also contend on a counter. With the `metrics` feature, `publish_metrics()` hands the counts
//! to the `metrics` facade, labelled by the name (never by a key); the checks never call the
//! facade. A named limiter's waits are recorded into the histogram `cellrate_wait_seconds` as
//! each ends. (`cellrate-redis` counts every answer, named or not: a round trip dwarfs an
//! add.)
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
//! - `std` (default): [`TickClock`] (the default clock), [`MonotonicClock`],
//!   `Limiter::new`, the waits, [`KeyedLimiter`] and naming.
//!   Without it the crate is `no_std` and needs `alloc`: [`Limiter::with_clock`] on a clock of
//!   your own or [`ManualClock`], reservations, [`all_of`] and quota changes remain.
//! - `async`: `Limiter::until_ready_n`, an executor-independent async wait (timer from the
//!   futures-timer crate), and `pace`, which paces streams, sinks and writers.
//! - `quanta`: `QuantaClock`, an exact clock read from the CPU's timestamp counter.
//! - `metrics`: `publish_metrics()` on named limiters (the `cellrate_*` counters and the
//!   gauge of keys held) and the histogram of their waits, to whatever recorder of the
//!   metrics crate is installed.
//! - `portable-atomic`: atomics from the portable-atomic crate, for targets without native
//!   64-bit compare-and-swap.
//!
//! # Companion crates
//! - `cellrate-http`: a tower layer for axum, hyper and tonic, keyed by client IP, API key or
//!   an extractor of your own, with `Retry-After` and the `RateLimit` headers.
//! - `cellrate-redis`: buckets kept in Redis and shared by many servers, with the same
//!   decisions.
#![cfg_attr(not(any(feature = "std", loom)), no_std)]
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate alloc;

// The crate's own tests share the integration tests' replay oracle (`tests/oracle`), which names
// the crate as users do.
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
