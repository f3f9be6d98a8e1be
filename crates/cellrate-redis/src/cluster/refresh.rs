//! The slot map kept current: read from a node, and read again in the background while it is
//! stale or a node is down, backing off.

use super::Inner;
use crate::connector::Connector;
use crate::error::Error;
use crate::node::Node;
use crate::slot_map::{self, SlotMap};
use redis::{ConnectionAddr, Value};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

impl Inner {
    pub(super) fn current(&self) -> Arc<SlotMap> {
        self.map.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Reads `CLUSTER SLOTS` from `node` and installs the map, keeping the nodes (and their
    /// connections) that are still primaries.
    pub(super) async fn refresh_from(&self, node: &Node) -> Result<(), Error> {
        let deadline = self.options.deadline.max(self.options.connection_timeout);
        let reply: Value = node
            .run(deadline, |mut c| async move {
                redis::cmd("CLUSTER").arg("SLOTS").query_async(&mut c).await
            })
            .await?;
        let ranges = slot_map::parse_slots(&reply, node.addr())?;
        let old = self.current();
        let strays = self
            .strays
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let map = SlotMap::build(ranges, |host, port| {
            let addr = format!("{host}:{port}");
            match old.node_at(&addr).or_else(|| strays.get(&addr).cloned()) {
                Some(node) => Ok(node),
                None => self.node_at(host, port),
            }
        })?;
        *self.map.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(map);
        Ok(())
    }

    /// A node at `host:port` with the seed's settings (TLS included), connecting in the
    /// background.
    pub(super) fn node_at(&self, host: &str, port: u16) -> Result<Node, Error> {
        let addr = match self.template.addr() {
            ConnectionAddr::Tcp(..) => ConnectionAddr::Tcp(host.to_owned(), port),
            ConnectionAddr::TcpTls {
                insecure,
                tls_params,
                ..
            } => ConnectionAddr::TcpTls {
                host: host.to_owned(),
                port,
                insecure: *insecure,
                tls_params: tls_params.clone(),
            },
            other => {
                return Err(Error::Unavailable(format!(
                    "cluster nodes over {other} are not supported; use redis:// or rediss:// \
                     seeds"
                )))
            }
        };
        let client = redis::Client::open(self.template.clone().set_addr(addr))?;
        Ok(Node::connect_lazy(Connector::fixed(client), &self.options))
    }
}

/// Refreshes the slot map while a reply said it is out of date or a node is down (a replica
/// may have been promoted in its place): at once, then backing off from the probe interval to
/// 16 times it while it stays stale. Ends with the limiter.
pub(super) async fn watch(cluster: Weak<Inner>) {
    let mut backoff = 0u32;
    loop {
        let Some(inner) = cluster.upgrade() else {
            return;
        };
        let base = inner.options.probe_interval;
        let map = inner.current();
        // Relaxed: see `Cluster::mark_stale`.
        let stale = inner.stale.swap(false, Ordering::Relaxed);
        if stale || map.nodes().iter().any(Node::is_down) {
            let mut refreshed = false;
            for node in map.nodes().iter().filter(|n| !n.is_down()) {
                if inner.refresh_from(node).await.is_ok() {
                    refreshed = true;
                    break;
                }
            }
            if !refreshed && map.nodes().iter().all(Node::is_down) {
                // Relaxed: see `Cluster::mark_stale`.
                inner.stale.store(true, Ordering::Relaxed);
            }
            backoff = (backoff + 1).min(5);
        } else {
            backoff = 0;
        }
        drop((inner, map));
        let factor = if backoff <= 1 { 1 } else { 1 << (backoff - 1) };
        tokio::time::sleep(base.saturating_mul(factor)).await;
    }
}
