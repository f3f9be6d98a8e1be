//! What a reply says of the connection it came on: whether the server can take writes.

use crate::error::Error;
use crate::memory::Read;
use redis::Value;

/// Whether a reply says the server cannot take writes (and so the connection must go).
pub(crate) trait Reply {
    fn not_primary(&self) -> bool {
        false
    }
}

impl Reply for () {}
impl Reply for String {}
impl Reply for Read {}

impl Reply for Value {
    fn not_primary(&self) -> bool {
        match self {
            Value::ServerError(e) => Error::from(redis::RedisError::from(e.clone())).not_primary(),
            _ => false,
        }
    }
}

impl Reply for Vec<Value> {
    fn not_primary(&self) -> bool {
        self.iter().any(Reply::not_primary)
    }
}
