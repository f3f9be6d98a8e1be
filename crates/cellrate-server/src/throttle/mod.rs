//! redis-cell's `CL.THROTTLE`, as RESP and `POST /throttle` both answer it: the arguments read
//! and checked as redis-cell reads them (`rate.rs`), the five figures of its reply made from a
//! decision with its rounding (`reply.rs`), and the calls' counts ([`counts`]). Where the
//! buckets live is the storage's business (`storage/throttle.rs` in this process,
//! `storage/redis_throttle.rs` in Redis).

pub(crate) mod counts;
mod rate;
mod reply;

pub(crate) use rate::{checked, duration_ns, parse_args, ArgError, Rate};
pub(crate) use reply::{Decision, Reply};
