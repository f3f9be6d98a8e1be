//! What a server's memory settings do to the limiter's buckets: `maxmemory` and
//! `maxmemory-policy`, read at every connection and on demand
//! ([`RedisLimiter::memory_settings`](super::RedisLimiter::memory_settings), `health.rs`), with
//! `CONFIG GET` where the server allows it and `INFO memory` where it does not (an ACL, a
//! managed service). A policy that can evict the limiter's keys is logged when first read from
//! a server (and again when it changes) and counted in
//! [`RedisStats::evicting_servers`](super::RedisStats::evicting_servers).

use redis::aio::MultiplexedConnection;
use redis::Value;
use std::sync::Mutex;

/// The memory settings of one server, as last read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemorySettings {
    /// The server: `host:port`, or `sentinel:<service>` for the primary a Sentinel names.
    pub server: String,
    /// `maxmemory` in bytes (0: no limit), if the server told it.
    pub maxmemory: Option<u64>,
    /// `maxmemory-policy`, if the server told it.
    pub policy: Option<String>,
}

/// What a server's memory settings do to the limiter's decisions (docs/design.md, section 7,
/// *What a deployment can lose*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryRisk {
    /// No `maxmemory` (0): Redis evicts nothing and refuses no write for memory.
    Unbounded,
    /// `maxmemory` with `noeviction`: near the limit, every script that would write (each
    /// admission) fails with `OOM`, and the failure policy answers it ([`FailOpen`] admits
    /// every such call); refusals are still decided, as they write nothing. Counted in
    /// [`RedisStats::oom`](super::RedisStats::oom).
    ///
    /// [`FailOpen`]: super::FailurePolicy::FailOpen
    RefusesWrites,
    /// `maxmemory` with any other policy: Redis evicts keys to make room, the limiter's among
    /// them, and a bucket evicted is a full bucket again, a burst given away. `volatile-*`
    /// policies evict them too (every bucket has an expiry), `volatile-ttl` the buckets
    /// nearest to full first, and before any key without an expiry.
    Evicts,
    /// The server told neither (`CONFIG GET` and `INFO` refused, or it did not answer).
    Unknown,
}

impl MemorySettings {
    /// What these settings do to the limiter's decisions.
    pub fn risk(&self) -> MemoryRisk {
        match (self.maxmemory, self.policy.as_deref()) {
            (Some(0), _) => MemoryRisk::Unbounded,
            (Some(_), Some("noeviction")) => MemoryRisk::RefusesWrites,
            (Some(_), Some(_)) => MemoryRisk::Evicts,
            _ => MemoryRisk::Unknown,
        }
    }
}

/// `maxmemory` and `maxmemory-policy` as read from a server.
pub(crate) struct Read(Option<u64>, Option<String>);

/// Reads `maxmemory` and `maxmemory-policy` on `conn`: `CONFIG GET`, else `INFO memory`; what
/// neither tells is `None`.
pub(crate) async fn read_settings(conn: &mut MultiplexedConnection) -> Read {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    pipe.cmd("CONFIG").arg("GET").arg("maxmemory");
    pipe.cmd("CONFIG").arg("GET").arg("maxmemory-policy");
    if let Ok([max, policy]) = pipe.query_async::<Vec<Value>>(conn).await.as_deref() {
        if let (Some(max), Some(policy)) = (config_value(max), config_value(policy)) {
            return Read(max.parse().ok(), Some(policy));
        }
    }
    let info = redis::cmd("INFO")
        .arg("memory")
        .query_async::<String>(conn)
        .await
        .unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(|v| v.trim().to_owned())
    };
    Read(
        field("maxmemory").and_then(|v| v.parse().ok()),
        field("maxmemory_policy"),
    )
}

/// The value of a one-parameter `CONFIG GET` reply (`[name, value]`, or a map in RESP3).
fn config_value(reply: &Value) -> Option<String> {
    let value = match reply {
        Value::Array(items) => items.get(1)?,
        Value::Map(pairs) => &pairs.first()?.1,
        _ => return None,
    };
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        Value::SimpleString(text) => Some(text.clone()),
        _ => None,
    }
}

/// A node's memory settings as last read.
#[derive(Debug, Default)]
pub(crate) struct MemoryCell(Mutex<Option<MemorySettings>>);

impl MemoryCell {
    /// Keeps the settings `read` from `server`, logging a policy that evicts when first seen
    /// or changed.
    pub(crate) fn set(&self, server: &str, read: Read) {
        let settings = MemorySettings {
            server: server.to_owned(),
            maxmemory: read.0,
            policy: read.1,
        };
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if last.as_ref() == Some(&settings) {
            return;
        }
        if settings.risk() == MemoryRisk::Evicts {
            tracing::warn!(
                "cellrate-redis: {} has maxmemory {} bytes and maxmemory-policy {}: Redis may \
                 evict the limiter's keys, and each bucket evicted is full again, a burst given \
                 away (volatile-* policies evict them too: every bucket has an expiry); set \
                 maxmemory-policy noeviction (writes near the limit then fail with OOM, which \
                 the failure policy answers) or give the limiter an instance of its own",
                settings.server,
                settings.maxmemory.unwrap_or_default(),
                settings.policy.as_deref().unwrap_or_default(),
            );
        }
        *last = Some(settings);
    }

    pub(crate) fn get(&self) -> Option<MemorySettings> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
