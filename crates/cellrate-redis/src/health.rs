//! The limiter's health as a server sees it: the memory settings of every server it decides
//! on, read on demand ([`RedisLimiter::memory_settings`]), and how many can evict its keys.

use super::memory::{read_settings, MemoryRisk, MemorySettings};
use super::node::Node;
use super::RedisLimiter;
use std::time::Duration;

impl RedisLimiter {
    /// The memory settings of every server the limiter decides on (one, or each primary of a
    /// Cluster), read now, within the deadline each: for a health check, which should fail on
    /// [`MemoryRisk::Evicts`] and may warn on [`MemoryRisk::RefusesWrites`] (see
    /// [`MemorySettings::risk`]). A server that does not answer in time keeps what it told at
    /// its last reading (`None` fields if never). The same settings are read at every
    /// connection; a policy that evicts is logged (`tracing`, warn) and counted in
    /// [`RedisStats::evicting_servers`](super::RedisStats::evicting_servers).
    pub async fn memory_settings(&self) -> Vec<MemorySettings> {
        let mut all = Vec::new();
        for node in self.conn.nodes() {
            all.push(read_node(&node, self.options.deadline).await);
        }
        all
    }

    /// How many servers' settings, as last read, let Redis evict the limiter's keys.
    pub(crate) fn evicting_servers(&self) -> u64 {
        let nodes = self.conn.nodes();
        let evicting = nodes.iter().filter(|n| {
            n.memory()
                .get()
                .is_some_and(|m| m.risk() == MemoryRisk::Evicts)
        });
        evicting.count() as u64
    }
}

/// `node`'s settings read now, or as last read if it does not answer within `deadline`.
async fn read_node(node: &Node, deadline: Duration) -> MemorySettings {
    let read = node
        .run(
            deadline,
            |mut c| async move { Ok(read_settings(&mut c).await) },
        )
        .await;
    if let Ok(read) = read {
        node.memory().set(node.addr(), read);
    }
    node.memory().get().unwrap_or(MemorySettings {
        server: node.addr().to_owned(),
        maxmemory: None,
        policy: None,
    })
}
