//! What a limiter answers when Redis does not ([`FailurePolicy`]), and the counts of every
//! answer given ([`Stats`]).

use super::error::Error;
use crate::outcome::{Allowed, Denied, Level};
use crate::sync::counter::{AtomicU64, Ordering};
use core::time::Duration;

/// What [`check_key_n`](super::RedisLimiter::check_key_n) answers when Redis gives no decision
/// (unreachable, an error reply, or no reply within the deadline).
///
/// Either way the failure is counted in [`Stats`], and a call whose outcome is unknown (the
/// deadline passed after the script was sent) is counted in [`Stats::unknown`] as well: it may
/// have spent tokens on the server, and it is never retried. A request that costs more than
/// the burst is denied whatever the policy, since it could never pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Admit the request: availability over precision. The answer is an [`Allowed`] with
    /// `remaining` 0 and `reset_after` 0 (nothing is known about the bucket).
    #[default]
    FailOpen,
    /// Refuse the request: the limit over availability. The answer is a [`Denied`] with
    /// `remaining` 0, `reset_after` 0 and `retry_after` the limiter's
    /// [`failure_retry_after`](super::RedisOptions::failure_retry_after).
    FailClosed,
}

/// Counts of the answers a limiter gave through its policy-applying calls (`check_*`).
///
/// `allowed` and `denied` are Redis's decisions. `failed_open` and `failed_closed` count every
/// call answered by the [`FailurePolicy`] instead; `unknown` counts those of them whose outcome
/// is unknown (timed out or cut off after sending: the tokens may have been spent), so
/// `unknown <= failed_open + failed_closed`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests Redis admitted.
    pub allowed: u64,
    /// Requests Redis refused.
    pub denied: u64,
    /// Requests admitted by [`FailurePolicy::FailOpen`] because Redis gave no decision.
    pub failed_open: u64,
    /// Requests refused by [`FailurePolicy::FailClosed`] (or because their cost exceeds the
    /// burst) because Redis gave no decision.
    pub failed_closed: u64,
    /// Of the failures, those whose outcome is unknown: the deadline passed or the connection
    /// was lost after the call was sent.
    pub unknown: u64,
}

/// The live counters behind [`Stats`]. `Relaxed` throughout: each is an independent tally
/// that publishes nothing else.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    allowed: AtomicU64,
    denied: AtomicU64,
    failed_open: AtomicU64,
    failed_closed: AtomicU64,
    unknown: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> Stats {
        // Relaxed throughout: independent counters that publish nothing; a snapshot taken
        // while calls are in flight may be off by those calls.
        Stats {
            allowed: self.allowed.load(Ordering::Relaxed),
            denied: self.denied.load(Ordering::Relaxed),
            failed_open: self.failed_open.load(Ordering::Relaxed),
            failed_closed: self.failed_closed.load(Ordering::Relaxed),
            unknown: self.unknown.load(Ordering::Relaxed),
        }
    }

    /// Counts a decision Redis made.
    pub(crate) fn record(&self, decision: &Result<Allowed, Denied>) {
        let counter = match decision {
            Ok(_) => &self.allowed,
            Err(_) => &self.denied,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// How a limiter answers for Redis when Redis does not.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fallback {
    pub(crate) policy: FailurePolicy,
    pub(crate) retry_after: Duration,
}

impl Fallback {
    /// The answer for a request of `cost` tokens (burst `burst`) that failed with `error`,
    /// counted in `counters`.
    pub(crate) fn answer(
        &self,
        error: &Error,
        cost: u32,
        burst: u32,
        counters: &Counters,
    ) -> Result<Allowed, Denied> {
        // Relaxed on every counter below: see `Counters::snapshot`.
        if error.outcome_unknown() {
            counters.unknown.fetch_add(1, Ordering::Relaxed);
        }
        let nothing_known = Level {
            reset_after_ns: 0,
            depth_ns: 0,
            interval_ns: 1,
        };
        if cost > burst {
            counters.failed_closed.fetch_add(1, Ordering::Relaxed);
            return Err(Denied::new(nothing_known, None));
        }
        match self.policy {
            FailurePolicy::FailOpen => {
                counters.failed_open.fetch_add(1, Ordering::Relaxed);
                Ok(Allowed::new(nothing_known))
            }
            FailurePolicy::FailClosed => {
                counters.failed_closed.fetch_add(1, Ordering::Relaxed);
                let retry_ns = u64::try_from(self.retry_after.as_nanos()).unwrap_or(u64::MAX);
                Err(Denied::new(nothing_known, Some(retry_ns)))
            }
        }
    }
}
