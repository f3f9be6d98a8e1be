//! The connection: one health-checked [`Node`] for a single Redis (at an address, or the
//! primary a Sentinel names), or a [`Cluster`] of them; scripts run on it one call at a time or
//! as pipelines, chunked to fit the deadline.

use super::cluster::Cluster;
use super::connector::Connector;
use super::error::Error;
use super::node::Node;
use super::node_script::{client, needs_runtime, run_chunks, run_script, Call, Pace};
use super::options::RedisOptions;
use redis::{Script, Value};
use std::sync::Arc;
use std::time::Duration;

/// A cheap-to-clone handle on the connection (every caller's commands are multiplexed onto
/// one socket per server).
#[derive(Clone)]
pub(crate) enum Conn {
    /// A single server.
    Single(Node),
    /// A Redis Cluster: commands go to the node that owns their key's slot.
    Cluster(Cluster),
}

impl Conn {
    /// A single-server connection, connected (within the connection timeout) on return.
    pub(crate) async fn single(url: &str, options: &RedisOptions) -> Result<Conn, Error> {
        let connector = Connector::fixed(client(url, options)?);
        Ok(Conn::Single(Node::connect(connector, options).await?))
    }

    /// A single-server connection made in the background: returns at once. Needs a Tokio
    /// runtime.
    pub(crate) fn single_lazy(url: &str, options: &RedisOptions) -> Result<Conn, Error> {
        needs_runtime("connect_lazy")?;
        let connector = Connector::fixed(client(url, options)?);
        Ok(Conn::Single(Node::connect_lazy(connector, options)))
    }

    /// The primary that the Sentinels name, connected on return.
    pub(crate) async fn sentinel(
        connector: Connector,
        options: &RedisOptions,
    ) -> Result<Conn, Error> {
        Ok(Conn::Single(Node::connect(connector, options).await?))
    }

    /// A Cluster connection through the given seed nodes.
    pub(crate) async fn cluster(urls: &[&str], options: &RedisOptions) -> Result<Conn, Error> {
        Ok(Conn::Cluster(Cluster::connect(urls, options).await?))
    }

    /// Runs `script` on `keys` (EVALSHA; on NOSCRIPT, SCRIPT LOAD and EVALSHA again) within
    /// `deadline`. On a Cluster the keys must share one slot, or nothing is sent; a redirect
    /// (the script did not run) is followed as the Cluster says.
    pub(crate) async fn invoke(
        &self,
        script: &Arc<Script>,
        keys: &[String],
        args: &[i64],
        deadline: Duration,
    ) -> Result<Value, Error> {
        self.invoke_joint(script, None, keys, args, deadline).await
    }

    /// [`Conn::invoke`] of a script of several keys: on a Cluster whose slot is being
    /// migrated, `first_sight` writes the keys neither node holds on the node importing it, as
    /// the absent buckets they are (`cluster/importing.rs`), so that the script can run there.
    pub(crate) async fn invoke_joint(
        &self,
        script: &Arc<Script>,
        first_sight: Option<&Arc<Script>>,
        keys: &[String],
        args: &[i64],
        deadline: Duration,
    ) -> Result<Value, Error> {
        match self {
            Conn::Single(node) => run_script(node, script, keys, args, deadline, false).await,
            Conn::Cluster(cluster) => {
                cluster
                    .invoke(script, keys, args, deadline, first_sight)
                    .await
            }
        }
    }

    /// The servers calls go to: the one, or each primary of the Cluster's map.
    pub(crate) fn nodes(&self) -> Vec<Node> {
        match self {
            Conn::Single(node) => vec![node.clone()],
            Conn::Cluster(cluster) => cluster.nodes(),
        }
    }

    /// Runs `script` on every call, answering in order, each reply or why there is none. Calls
    /// go as pipelines of at most `pace.chunk`, one chunk after another, each with the whole
    /// deadline; on a Cluster one such sequence per node, the nodes at once. When a chunk
    /// fails, the later chunks of that node are not sent ([`Error::Unavailable`]).
    pub(crate) async fn invoke_many(
        &self,
        script: &Arc<Script>,
        calls: &[Call],
        pace: Pace,
    ) -> Vec<Result<Value, Error>> {
        match self {
            Conn::Single(node) => run_chunks(node, script, calls, pace, false).await,
            Conn::Cluster(cluster) => cluster.invoke_many(script, calls, pace).await,
        }
    }
}
