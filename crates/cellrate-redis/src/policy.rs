//! The answer given when Redis does not decide (by the limiter's [`FailurePolicy`]), and the
//! counts of every answer given ([`RedisStats`]).

use super::error::Error;
use super::failure_policy::FailurePolicy;
use super::local::{Ask, Local, LocalAnswer};
use super::options::RedisOptions;
use super::source::Source;
use super::stats::RedisStats;
use crate::micros::Level;
use cellrate::{Allowed, Denied};
use std::sync::atomic::{AtomicU64, Ordering};

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
    oom: AtomicU64,
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
        stats.oom = read(&self.oom);
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
) -> (Result<Allowed, Denied>, Source) {
    let (answer, source) = answer_each(error, ask, options, local, counters);
    (answer.decision, source)
}

/// [`answer`], with each key's own answer when the local fallback decided an all-or-nothing
/// ask (`each` is empty otherwise: every key then has the policy's answer).
pub(crate) fn answer_each(
    error: &Error,
    ask: Ask<'_>,
    options: &RedisOptions,
    local: &Local,
    counters: &Counters,
) -> (LocalAnswer, Source) {
    let decision = |decision| LocalAnswer {
        decision,
        each: Vec::new(),
    };
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
        let refused = decision(Err(nothing_known.denied(None)));
        return (refused, Source::Fault(error.clone()));
    }
    if error.outcome_unknown() {
        Counters::bump(&counters.unknown);
    }
    if error.reply_code() == Some("OOM") {
        out_of_memory(error, options, counters);
    }
    let policy = || Source::Policy(error.clone());
    if ask.cost() > ask.burst() {
        Counters::bump(&counters.failed_closed);
        return (decision(Err(nothing_known.denied(None))), policy());
    }
    let fail_closed = || {
        Counters::bump(&counters.failed_closed);
        let retry = options.failure_retry_after.as_nanos();
        let retry = u64::try_from(retry).unwrap_or(u64::MAX);
        (decision(Err(nothing_known.denied(Some(retry)))), policy())
    };
    match options.failure_policy {
        FailurePolicy::FailOpen => {
            Counters::bump(&counters.failed_open);
            (decision(Ok(nothing_known.allowed())), policy())
        }
        FailurePolicy::FailClosed => fail_closed(),
        FailurePolicy::Local { .. } => match local.check(&ask) {
            Some(answer) => {
                Counters::bump(match answer.decision {
                    Ok(_) => &counters.local_allowed,
                    Err(_) => &counters.local_denied,
                });
                (answer, Source::Local(error.clone()))
            }
            None => fail_closed(),
        },
    }
}

/// Counts an answer Redis refused for want of memory, and logs the first (a warning: it says
/// what the failure policy does while it lasts), the others at debug level.
fn out_of_memory(error: &Error, options: &RedisOptions, counters: &Counters) {
    // Relaxed: see `Counters::fill`; the first to count logs.
    if counters.oom.fetch_add(1, Ordering::Relaxed) > 0 {
        tracing::debug!("cellrate-redis: out of memory: {error}");
        return;
    }
    let answer = match options.failure_policy {
        FailurePolicy::FailOpen => "admits every call that would spend (FailOpen)",
        FailurePolicy::FailClosed => "refuses every call that would spend (FailClosed)",
        FailurePolicy::Local { .. } => "decides every call that would spend locally (Local)",
    };
    tracing::warn!(
        "cellrate-redis: Redis refuses writes for want of memory ({error}); while it does, the \
         failure policy {answer}, and refusals are still Redis's. Raise maxmemory, or give the \
         limiter an instance of its own (logged once; counted in RedisStats::oom)"
    );
}
