//! [`Source`]: who gave the answer of a call the failure policy applies to, and [`Answer`]: an
//! answer with its source.

use super::error::Error;
use cellrate::Denied;

/// Who gave the answer of a call to which the [`FailurePolicy`](super::FailurePolicy)
/// applies: a caller that answers clients of its own (an HTTP layer) tells them a bucket's
/// figures only when a bucket decided, and a fault of the deployment as a fault of the server,
/// not as a refusal of their request.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Source {
    /// Redis decided on the bucket (or the deny cache repeated a refusal Redis made): the
    /// figures are the bucket's.
    Redis,
    /// Redis gave no decision (the error says why) and the local fallback of
    /// [`FailurePolicy::Local`](super::FailurePolicy::Local) decided on a bucket of its own:
    /// the figures are that bucket's, under this process's share of the quota.
    Local(Error),
    /// Redis gave no decision (the error says why) and the policy answered without a bucket:
    /// `FailOpen` or `FailClosed`, `Local` without a table for the quota, or a cost above the
    /// burst. The figures (`remaining` 0, `reset_after` 0) tell nothing of any bucket.
    Policy(Error),
    /// A [usage error](Error::is_usage): refused under every policy. A fault of the
    /// deployment or the caller, which [`Error::remedy`] says how to mend, and not a refusal
    /// of the request: tell it as a fault (a 5xx), not as a limit reached.
    Fault(Error),
}

impl Source {
    /// Whether the answer's figures are a bucket's: Redis's, or the local fallback's.
    pub fn from_bucket(&self) -> bool {
        matches!(self, Source::Redis | Source::Local(_))
    }

    /// Why Redis gave no decision, if it gave none.
    pub fn error(&self) -> Option<&Error> {
        match self {
            Source::Redis => None,
            Source::Local(e) | Source::Policy(e) | Source::Fault(e) => Some(e),
        }
    }
}

/// The answer of a call and who gave it
/// ([`RedisLimiter::check_key_n_answer`](super::RedisLimiter::check_key_n_answer),
/// [`RedisLimiter::reserve_key_n_answer`](super::RedisLimiter::reserve_key_n_answer)).
#[derive(Debug)]
#[non_exhaustive]
pub struct Answer<T> {
    /// The answer: an admission (`T`) or a refusal, as the call without `_answer` gives it.
    pub decision: Result<T, Denied>,
    /// Who gave it.
    pub source: Source,
}
