//! What a limiter answers when Redis does not ([`FailurePolicy`]), and the counts of every
//! answer given ([`RedisStats`]).

use super::error::Error;
use super::local::{Ask, Local};
use super::options::RedisOptions;
use super::stats::RedisStats;
use crate::micros::Level;
use cellrate::{Allowed, Denied};
use std::sync::atomic::{AtomicU64, Ordering};

/// What [`check_key_n`](super::RedisLimiter::check_key_n) answers when Redis gives no decision
/// (unreachable, known to be down, or no reply within the deadline).
///
/// Either way the failure is counted in [`RedisStats`], and a call whose outcome is unknown (the
/// deadline passed after the script was sent) is counted in [`RedisStats::unknown`] as well: it may
/// have spent tokens on the server, and it is never retried. A request that costs more than
/// the burst is denied whatever the policy, since it could never pass. No policy answers a
/// [usage error](Error::is_usage) (keys of different slots, a key of another type or holding
/// a corrupt value, a quota the script cannot hold): those are refused and counted in
/// [`RedisStats::errors`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailurePolicy {
    /// Admit the request: availability over precision. The answer is an [`Allowed`] with
    /// `remaining` 0 and `reset_after` 0 (nothing is known about the bucket).
    #[default]
    FailOpen,
    /// Refuse the request: the limit over availability. The answer is a [`Denied`] with
    /// `remaining` 0, `reset_after` 0 and `retry_after` the limiter's
    /// [`failure_retry_after`](super::RedisOptions::failure_retry_after).
    FailClosed,
    /// Decide with a local [`KeyedLimiter`](cellrate::KeyedLimiter) while Redis gives no
    /// decision: each quota becomes this process's share of it, `quota.split(servers)` (or
    /// [`RedisOptions::local_quota`](super::RedisOptions::local_quota) for the limiter's own
    /// quota), so that `servers` processes falling back together admit about what the shared
    /// limit would. Local buckets start as the Redis ones do (full, or empty) and are not
    /// synchronised with Redis in either direction. Counted in [`RedisStats::local_allowed`] and
    /// [`RedisStats::local_denied`]. A quota that cannot be split, or more than 64 distinct quotas,
    /// fail closed.
    Local {
        /// How many processes share the limit.
        servers: u32,
    },
}

/// The live counters behind [`Stats`]. `Relaxed` throughout: each is an independent tally
/// that publishes nothing else.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    allowed: AtomicU64,
    denied: AtomicU64,
    peeks: AtomicU64,
    cached_denied: AtomicU64,
    failed_open: AtomicU64,
    failed_closed: AtomicU64,
    local_allowed: AtomicU64,
    local_denied: AtomicU64,
    unknown: AtomicU64,
    errors: AtomicU64,
}

impl Counters {
    /// The counts, into `stats`.
    pub(crate) fn fill(&self, stats: &mut RedisStats) {
        // Relaxed throughout: independent counters that publish nothing; a snapshot taken
        // while calls are in flight may be off by those calls.
        let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
        stats.allowed = read(&self.allowed);
        stats.denied = read(&self.denied);
        stats.peeks = read(&self.peeks);
        stats.cached_denied = read(&self.cached_denied);
        stats.failed_open = read(&self.failed_open);
        stats.failed_closed = read(&self.failed_closed);
        stats.local_allowed = read(&self.local_allowed);
        stats.local_denied = read(&self.local_denied);
        stats.unknown = read(&self.unknown);
        stats.errors = read(&self.errors);
    }

    fn bump(counter: &AtomicU64) {
        // Relaxed: see `snapshot`.
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a decision Redis made for a request of `cost` tokens.
    pub(crate) fn record(&self, decision: &Result<Allowed, Denied>, cost: u32) {
        Counters::bump(match decision {
            Ok(_) if cost == 0 => &self.peeks,
            Ok(_) => &self.allowed,
            Err(_) => &self.denied,
        });
    }

    /// Counts a refusal of the deny cache.
    pub(crate) fn record_cached(&self) {
        Counters::bump(&self.cached_denied);
    }
}

/// The answer to a request Redis gave no decision for: `error` says why, `ask` what was asked.
/// Counted in `counters`; the options' error hook is told.
pub(crate) fn answer(
    error: &Error,
    ask: Ask<'_>,
    options: &RedisOptions,
    local: &Local,
    counters: &Counters,
) -> Result<Allowed, Denied> {
    if let Some(hook) = &options.on_error {
        hook(error);
    }
    let nothing_known = Level {
        reset_after_ns: 0,
        depth_ns: 0,
        interval_ns: 1,
    };
    if error.is_usage() {
        Counters::bump(&counters.errors);
        return Err(nothing_known.denied(None));
    }
    if error.outcome_unknown() {
        Counters::bump(&counters.unknown);
    }
    if ask.cost() > ask.burst() {
        Counters::bump(&counters.failed_closed);
        return Err(nothing_known.denied(None));
    }
    let fail_closed = || {
        Counters::bump(&counters.failed_closed);
        let retry = options.failure_retry_after.as_nanos();
        Err(nothing_known.denied(Some(u64::try_from(retry).unwrap_or(u64::MAX))))
    };
    match options.failure_policy {
        FailurePolicy::FailOpen => {
            Counters::bump(&counters.failed_open);
            Ok(nothing_known.allowed())
        }
        FailurePolicy::FailClosed => fail_closed(),
        FailurePolicy::Local { .. } => match local.check(&ask) {
            Some(decision) => {
                Counters::bump(match decision {
                    Ok(_) => &counters.local_allowed,
                    Err(_) => &counters.local_denied,
                });
                decision
            }
            None => fail_closed(),
        },
    }
}
