//! `Error`: why the Redis backend could not answer, and whether the call may have been applied.

use crate::nanos::Nanos;
use crate::quota::Quota;
use core::fmt;
use core::time::Duration;

/// Why a [`RedisLimiter`](super::RedisLimiter) call has no answer from Redis.
///
/// [`Error::outcome_unknown`] tells apart the failures after which the decision may still have
/// been applied on the server (a deadline hit, a connection lost mid-call) from those where it
/// certainly was not (refused connection, error reply). Neither kind is ever retried blindly.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The client or the server reported an error (connection refused or lost, error reply).
    Redis(redis::RedisError),
    /// The per-call deadline passed before the reply came. The script may have run.
    Timeout(Duration),
    /// The quota's depth (`burst * emission_interval`, in whole microseconds) exceeds 2^51 µs,
    /// about 71 years: the server-side arithmetic would no longer be exact.
    QuotaTooLarge(Quota),
    /// A time past 2^52 µs since the Unix epoch (the year 2112): beyond exact Lua arithmetic.
    TimeOutOfRange(Nanos),
    /// The server answered something the scripts never return (for example a key that holds
    /// something other than a TAT).
    UnexpectedReply(String),
}

impl Error {
    /// `true` when the call may have been applied on the server although no answer came back:
    /// the deadline passed, or the connection was lost or timed out after the call was sent.
    pub fn outcome_unknown(&self) -> bool {
        match self {
            Error::Timeout(_) => true,
            Error::Redis(e) => {
                e.is_timeout() || (e.is_connection_dropped() && !e.is_connection_refusal())
            }
            _ => false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Redis(e) => write!(f, "redis: {e}"),
            Error::Timeout(d) => write!(f, "no reply from redis within {d:?} (outcome unknown)"),
            Error::QuotaTooLarge(q) => write!(
                f,
                "{q:?}: a bucket depth above 2^51 microseconds cannot be kept exactly in redis"
            ),
            Error::TimeOutOfRange(now) => write!(
                f,
                "time {now} is past 2^52 microseconds since the Unix epoch (about 2112)"
            ),
            Error::UnexpectedReply(r) => write!(f, "unexpected reply from redis: {r}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Redis(e) => Some(e),
            _ => None,
        }
    }
}

impl From<redis::RedisError> for Error {
    fn from(e: redis::RedisError) -> Error {
        Error::Redis(e)
    }
}
