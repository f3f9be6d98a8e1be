//! The connection: one reconnecting [`ConnectionManager`] to a single Redis, or a Cluster
//! connection; scripts run on it one at a time or as a pipeline.

use super::options::RedisOptions;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::Slot;
use redis::{ErrorKind, RedisResult, Script, ServerErrorKind, Value};
use std::collections::HashMap;
use std::time::Duration;

/// A cheap-to-clone handle on the connection (both kinds multiplex every caller's commands
/// onto shared sockets).
#[derive(Clone)]
pub(crate) enum Conn {
    /// A single server, reconnected in the background when the connection is lost.
    Single(ConnectionManager),
    /// A Redis Cluster: commands go to the node that owns their key's slot.
    Cluster(ClusterConnection),
}

/// One script call: the key and the arguments after it.
pub(crate) struct Call {
    pub(crate) key: String,
    pub(crate) args: [i64; 6],
}

impl Conn {
    /// A single-server connection, connected (within the connection timeout) on return.
    pub(crate) async fn single(url: &str, options: &RedisOptions) -> RedisResult<Conn> {
        let client = redis::Client::open(url)?;
        let manager = ConnectionManager::new_with_config(client, manager_config(options)).await?;
        Ok(Conn::Single(manager))
    }

    /// A single-server connection made in the background: returns at once; the first call
    /// waits for it. Needs a Tokio runtime.
    pub(crate) fn single_lazy(url: &str, options: &RedisOptions) -> RedisResult<Conn> {
        let client = redis::Client::open(url)?;
        let manager = ConnectionManager::new_lazy_with_config(client, manager_config(options))?;
        Ok(Conn::Single(manager))
    }

    /// A Cluster connection through the given seed nodes.
    pub(crate) async fn cluster(urls: &[&str], options: &RedisOptions) -> RedisResult<Conn> {
        let client = ClusterClientBuilder::new(urls.iter().copied())
            .connection_timeout(options.connection_timeout)
            .response_timeout(options.deadline)
            // Never resend a request: after a lost connection the script may have run. A
            // redirect (MOVED/ASK while slots move) then fails that call, which did not run,
            // and the slot map is refreshed for the next.
            .retries(0)
            .build()?;
        Ok(Conn::Cluster(client.get_async_connection().await?))
    }

    /// Runs `script` on one key (EVALSHA; on NOSCRIPT, SCRIPT LOAD and EVALSHA again).
    pub(crate) async fn invoke(&self, script: &Script, call: &Call) -> RedisResult<Value> {
        self.invoke_keys(script, std::slice::from_ref(&call.key), &call.args)
            .await
    }

    /// Runs `script` on several keys at once (on a Cluster they must share one slot).
    pub(crate) async fn invoke_keys(
        &self,
        script: &Script,
        keys: &[String],
        args: &[i64],
    ) -> RedisResult<Value> {
        let mut invocation = script.prepare_invoke();
        for key in keys {
            invocation.key(key);
        }
        invocation.arg(args);
        match self.clone() {
            Conn::Single(mut c) => invocation.invoke_async(&mut c).await,
            Conn::Cluster(mut c) => invocation.invoke_async(&mut c).await,
        }
    }

    /// Runs `script` on every call in one round trip (one per Cluster slot), answering in order.
    /// A call the server answered NOSCRIPT did not run: those are sent again once after the
    /// script is loaded. Every other per-call error reply stays in its place in the result.
    pub(crate) async fn invoke_many(
        &self,
        script: &Script,
        calls: &[Call],
    ) -> RedisResult<Vec<Value>> {
        let mut replies = self.pipeline(script, calls).await?;
        let missing: Vec<usize> = (0..replies.len())
            .filter(|&i| is_noscript(&replies[i]))
            .collect();
        if !missing.is_empty() {
            self.load(script).await?;
            let again: Vec<Call> = missing
                .iter()
                .map(|&i| Call {
                    key: calls[i].key.clone(),
                    args: calls[i].args,
                })
                .collect();
            for (i, reply) in missing
                .into_iter()
                .zip(self.pipeline(script, &again).await?)
            {
                replies[i] = reply;
            }
        }
        Ok(replies)
    }

    async fn load(&self, script: &Script) -> RedisResult<()> {
        match self.clone() {
            Conn::Single(mut c) => script.load_async(&mut c).await.map(drop),
            // SCRIPT LOAD is sent to every primary by the cluster connection.
            Conn::Cluster(mut c) => script.load_async(&mut c).await.map(drop),
        }
    }

    /// The calls as EVALSHA pipelines, errors kept per call: one pipeline on a single server,
    /// one per slot (sent concurrently) on a Cluster.
    async fn pipeline(&self, script: &Script, calls: &[Call]) -> RedisResult<Vec<Value>> {
        match self.clone() {
            Conn::Single(mut c) => {
                evalsha_pipeline(script, calls.iter())
                    .query_async(&mut c)
                    .await
            }
            Conn::Cluster(c) => {
                let mut by_slot: HashMap<Slot, Vec<usize>> = HashMap::new();
                for (i, call) in calls.iter().enumerate() {
                    by_slot.entry(Slot::for_key(&call.key)).or_default().push(i);
                }
                let tasks: Vec<_> = by_slot
                    .into_values()
                    .map(|indices| {
                        let pipe = evalsha_pipeline(script, indices.iter().map(|&i| &calls[i]));
                        let mut c = c.clone();
                        let task =
                            tokio::spawn(
                                async move { pipe.query_async::<Vec<Value>>(&mut c).await },
                            );
                        (indices, task)
                    })
                    .collect();
                let mut replies = vec![Value::Nil; calls.len()];
                for (indices, task) in tasks {
                    let answers = task.await.map_err(|e| {
                        redis::RedisError::from((ErrorKind::Client, "batch task", e.to_string()))
                    })??;
                    for (i, reply) in indices.into_iter().zip(answers) {
                        replies[i] = reply;
                    }
                }
                Ok(replies)
            }
        }
    }
}

/// Short connection attempts and few retries: a call waits at most its deadline anyway, and a
/// down server must not hold callers for seconds.
fn manager_config(options: &RedisOptions) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(options.connection_timeout))
        .set_response_timeout(Some(options.deadline))
        .set_number_of_retries(options.reconnect_retries)
        .set_min_delay(Duration::from_millis(20))
        .set_max_delay(Duration::from_millis(500))
}

fn evalsha_pipeline<'a>(script: &Script, calls: impl Iterator<Item = &'a Call>) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for call in calls {
        pipe.cmd("EVALSHA")
            .arg(script.get_hash())
            .arg(1)
            .arg(&call.key)
            .arg(&call.args[..]);
    }
    pipe
}

fn is_noscript(reply: &Value) -> bool {
    matches!(reply, Value::ServerError(e) if e.kind() == Some(ServerErrorKind::NoScript))
}
