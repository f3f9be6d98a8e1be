//! `Error`: why the Redis backend gave no decision, whether the call may have been applied, and
//! whether the fault is the caller's or the deployment's rather than the server's availability.

use cellrate::Nanos;
use cellrate::Quota;
use core::fmt;
use core::time::Duration;
use redis::{ErrorKind, ServerErrorKind};

/// Why a [`RedisLimiter`](super::RedisLimiter) call has no decision from Redis.
///
/// Two questions sort every error. [`Error::outcome_unknown`]: may the call have been applied on
/// the server although no answer came back (a deadline hit after sending, a connection lost
/// mid-call)? [`Error::is_usage`]: is it a mistake of the caller or of the deployment (keys of
/// different Cluster slots, a key holding something else, a quota the script cannot hold)
/// rather than Redis being unreachable or slow? Usage errors are never answered by the
/// [`FailurePolicy`](super::FailurePolicy): a `check_*` call refuses them.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Error {
    /// The client or the server reported an error (connection refused or lost, error reply).
    Redis(redis::RedisError),
    /// The per-call deadline passed after the call was sent and before the reply came. The
    /// script may have run.
    Timeout(Duration),
    /// The connection to the server named was lost while the call was out: it may have run.
    ConnectionLost(String),
    /// The call was not sent: the server (named in the message) is known to be down, no
    /// connection came up within the deadline, or an earlier part of the same batch failed.
    Unavailable(String),
    /// The quota's depth (`burst * emission_interval`, in whole microseconds) exceeds 2^51 µs,
    /// about 71 years: the server-side arithmetic would no longer be exact.
    QuotaTooLarge(Quota),
    /// A time at or past 2^52 µs since the Unix epoch (the year 2112): beyond exact Lua
    /// arithmetic.
    TimeOutOfRange(Nanos),
    /// Keys of one all-or-nothing check hash to different Cluster slots (the Redis keys, prefix
    /// included). Give them one `{hash tag}`.
    CrossSlot(Vec<String>),
    /// The Redis key holds a value of another type (a list, a hash...), not a TAT.
    WrongType(String),
    /// The Redis key holds a string that is not what the scripts write (a TAT: a positive
    /// integer of microseconds, no sign, no leading zero, at most 2^52 + 2^51, and after a
    /// give-back `:` and the credit given back). The value is not repeated: it may be another
    /// application's data, and errors get logged.
    CorruptValue {
        /// The Redis key.
        key: String,
    },
    /// The Redis server's clock reads past 2^52 µs since the Unix epoch (about 2112).
    ServerTimeOutOfRange,
    /// The options cannot work (such as an empty key prefix); the message says which and why.
    InvalidOptions(String),
    /// The server answered something the scripts never return.
    UnexpectedReply(String),
}

impl Error {
    /// `true` when the call may have been applied on the server although no answer came back:
    /// the deadline passed after sending, or the connection was lost after the call was sent.
    pub fn outcome_unknown(&self) -> bool {
        match self {
            Error::Timeout(_) | Error::ConnectionLost(_) => true,
            Error::Redis(e) => {
                e.is_timeout() || (e.is_connection_dropped() && !e.is_connection_refusal())
            }
            _ => false,
        }
    }

    /// `true` for a mistake of the caller or the deployment, which no retry and no failure
    /// policy mends: a quota or time out of range, keys of different slots, a key of another
    /// type or with a corrupt value, and server error replies that are not about availability
    /// (a command refused by the server or its ACL, a script error). Replies that are about
    /// availability (`LOADING`, `BUSY`, `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN`, `READONLY`,
    /// `MOVED`, `ASK`, out of memory) are not usage errors.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::QuotaTooLarge(_)
            | Error::TimeOutOfRange(_)
            | Error::ServerTimeOutOfRange
            | Error::InvalidOptions(_)
            | Error::CrossSlot(_)
            | Error::WrongType(_)
            | Error::CorruptValue { .. } => true,
            Error::Redis(e) => is_usage_reply(e),
            Error::Timeout(_)
            | Error::ConnectionLost(_)
            | Error::Unavailable(_)
            | Error::UnexpectedReply(_) => false,
        }
    }

    /// The code of the server's error reply (`READONLY`, `MOVED`, `OOM`...), if the error is
    /// one. Redis 5 and 6 wrap an error raised inside a script as `ERR Error running script
    /// ... -READONLY ...`: the code returned is then the wrapped one.
    pub fn reply_code(&self) -> Option<&str> {
        match self {
            Error::Redis(e) => reply_code(e),
            _ => None,
        }
    }

    /// For a [usage error](Error::is_usage), what mends it, in a sentence to log beside the
    /// error; `None` for the others (Redis unreachable, slow or busy: the failure policy's
    /// part).
    pub fn remedy(&self) -> Option<&'static str> {
        if !self.is_usage() {
            return None;
        }
        Some(match self {
            Error::CrossSlot(_) => {
                "give every key of one all-or-nothing check one {hash tag}, such as a tag in \
                 the key prefix of the limiters checked together (`rl:{app}:`)"
            }
            Error::WrongType(_) | Error::CorruptValue { .. } => {
                "give the limiter a key prefix no other data uses (the key holds something the \
                 limiter did not write, and is never overwritten)"
            }
            Error::QuotaTooLarge(_) => {
                "use a quota whose depth, burst times emission interval, is at most 2^51 \
                 microseconds"
            }
            Error::TimeOutOfRange(_) | Error::ServerTimeOutOfRange => {
                "set the clock (of the caller, or of the Redis server) to the present"
            }
            Error::InvalidOptions(_) => "mend the options as the error says",
            Error::Redis(e) if matches!(reply_code(e), Some("NOPERM")) || is_auth(e) => ACCESS,
            _ => {
                "check that the server is Redis 5 or later with Lua scripting, and that the \
                 limiter's Redis user may send the commands it needs (EVALSHA, EVAL, SCRIPT \
                 LOAD, and GET, SET, DEL and TIME in its scripts)"
            }
        })
    }

    /// Whether the reply says the server cannot take writes now (`READONLY`: a replica,
    /// `MASTERDOWN`: a replica that lost its primary, `LOADING`: a server reading its data):
    /// the connection is replaced and the name resolved again.
    pub(crate) fn not_primary(&self) -> bool {
        matches!(
            self.reply_code(),
            Some("READONLY" | "MASTERDOWN" | "LOADING")
        )
    }
}

/// What a Redis user the limiter runs as must be allowed.
const ACCESS: &str = "let the limiter's Redis user send EVALSHA, EVAL and SCRIPT LOAD, the \
    commands its scripts run (GET, SET, DEL, TIME), PING or ROLE, and on a Cluster CLUSTER \
    SLOTS and ASKING, on keys under its prefix (ACL SETUSER <user> ~<prefix>* +evalsha +eval \
    +script|load +get +set +del +time +ping +role +cluster|slots +asking), with the right \
    password";

/// Whether `e` is a refusal of the connection's credentials.
fn is_auth(e: &redis::RedisError) -> bool {
    e.kind() == ErrorKind::AuthenticationFailed || matches!(e.code(), Some("NOAUTH" | "WRONGPASS"))
}

/// The codes a script error of Redis 5 or 6 may wrap that the limiter tells apart: all about
/// availability but `NOPERM` (an ACL refusal, a usage error).
const WRAPPED: [&str; 10] = [
    "READONLY",
    "MASTERDOWN",
    "LOADING",
    "OOM",
    "MISCONF",
    "NOREPLICAS",
    "BUSY",
    "TRYAGAIN",
    "CLUSTERDOWN",
    "NOPERM",
];

/// The code of error reply `e`, unwrapped from a Redis 5-6 script error.
pub(crate) fn reply_code(e: &redis::RedisError) -> Option<&str> {
    let code = e.code()?;
    if code != "ERR" {
        return Some(code);
    }
    Some(e.detail().and_then(wrapped_code).unwrap_or(code))
}

/// The code inside `ERR Error running script (call to f_...): @user_script:1: -READONLY You
/// can't write against a read only replica.` (Redis 6; Redis 5 the same, or without the dash).
fn wrapped_code(detail: &str) -> Option<&'static str> {
    if !detail.starts_with("Error running script") {
        return None;
    }
    detail
        .split(": ")
        .skip(1)
        .map(|part| part.trim_start_matches('-'))
        .filter_map(|part| part.split([' ', '\r', '\n']).next())
        .find_map(|word| WRAPPED.iter().copied().find(|c| *c == word))
}

/// Whether an error reply says the request itself is wrong (rather than that the server is
/// busy, loading, read-only, out of memory or moving slots).
fn is_usage_reply(e: &redis::RedisError) -> bool {
    let wrapped = e.detail().filter(|_| e.code() == Some("ERR"));
    if let Some(code) = wrapped.and_then(wrapped_code) {
        return code == "NOPERM";
    }
    match e.kind() {
        ErrorKind::Server(kind) => matches!(
            kind,
            ServerErrorKind::ResponseError
                | ServerErrorKind::ExecAbort
                | ServerErrorKind::CrossSlot
                | ServerErrorKind::NoPerm
        ),
        ErrorKind::Extension => matches!(
            e.code().unwrap_or_default(),
            "WRONGTYPE" | "NOAUTH" | "WRONGPASS" | "NOPROTO"
        ),
        ErrorKind::AuthenticationFailed | ErrorKind::InvalidClientConfig => true,
        _ => false,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Redis(e) => write!(f, "redis: {e}"),
            Error::Timeout(d) => write!(f, "no reply from redis within {d:?} (outcome unknown)"),
            Error::ConnectionLost(why) => write!(
                f,
                "connection to redis lost with the call out (outcome unknown): {why}"
            ),
            Error::Unavailable(why) => write!(f, "redis unavailable: {why}"),
            Error::QuotaTooLarge(q) => write!(
                f,
                "{q:?}: a bucket depth above 2^51 microseconds cannot be kept exactly in redis"
            ),
            Error::TimeOutOfRange(now) => write!(
                f,
                "time {now} is at or past 2^52 microseconds since the Unix epoch (about 2112)"
            ),
            Error::CrossSlot(keys) => write!(
                f,
                "keys {keys:?} hash to different cluster slots; give them one {{hash tag}}"
            ),
            Error::WrongType(key) => write!(
                f,
                "redis key {key:?} holds a value of another type, not a rate limit TAT"
            ),
            Error::CorruptValue { key } => write!(
                f,
                "redis key {key:?} holds a string that is not a rate limit TAT; is the key \
                 prefix shared with other data?"
            ),
            Error::ServerTimeOutOfRange => write!(
                f,
                "the redis server's clock reads past 2^52 microseconds since the Unix epoch"
            ),
            Error::InvalidOptions(why) => write!(f, "invalid redis limiter options: {why}"),
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
        if e.is_timeout() {
            // The client's own timeouts are turned off; any left are deadlines all the same.
            return Error::Timeout(Duration::ZERO);
        }
        Error::Redis(e)
    }
}
