//! The connection: one health-checked [`Node`] for a single Redis, or a [`Cluster`] of them;
//! scripts run on it one call at a time or as pipelines, chunked to fit the deadline.

use super::cluster::Cluster;
use super::error::Error;
use super::node::Node;
use super::options::RedisOptions;
use redis::{Client, ErrorKind, Script, ServerErrorKind, Value};
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

/// One script call: the key and the arguments after it.
#[derive(Clone)]
pub(crate) struct Call {
    pub(crate) key: String,
    pub(crate) args: [i64; 7],
}

/// How a batch is sent: the deadline of each chunk and the most calls in one chunk.
#[derive(Clone, Copy)]
pub(crate) struct Pace {
    pub(crate) deadline: Duration,
    pub(crate) chunk: usize,
}

impl Conn {
    /// A single-server connection, connected (within the connection timeout) on return.
    pub(crate) async fn single(url: &str, options: &RedisOptions) -> Result<Conn, Error> {
        Ok(Conn::Single(
            Node::connect(Client::open(url)?, options).await?,
        ))
    }

    /// A single-server connection made in the background: returns at once. Needs a Tokio
    /// runtime.
    pub(crate) fn single_lazy(url: &str, options: &RedisOptions) -> Result<Conn, Error> {
        if tokio::runtime::Handle::try_current().is_err() {
            let why = "connect_lazy must be called within a Tokio runtime";
            return Err(redis::RedisError::from((ErrorKind::InvalidClientConfig, why)).into());
        }
        Ok(Conn::Single(Node::connect_lazy(
            Client::open(url)?,
            options,
        )))
    }

    /// A Cluster connection through the given seed nodes.
    pub(crate) async fn cluster(urls: &[&str], options: &RedisOptions) -> Result<Conn, Error> {
        Ok(Conn::Cluster(Cluster::connect(urls, options).await?))
    }

    /// Runs `script` on `keys` (EVALSHA; on NOSCRIPT, SCRIPT LOAD and EVALSHA again) within
    /// `deadline`. On a Cluster the keys must share one slot, or nothing is sent.
    pub(crate) async fn invoke(
        &self,
        script: &Script,
        keys: &[String],
        args: &[i64],
        deadline: Duration,
    ) -> Result<Value, Error> {
        let node = match self {
            Conn::Single(node) => node.clone(),
            Conn::Cluster(cluster) => {
                if !Cluster::same_slot(keys) {
                    return Err(Error::CrossSlot(keys.to_vec()));
                }
                cluster.node_for(keys.first().map_or("", String::as_str))?
            }
        };
        let mut invocation = script.prepare_invoke();
        for key in keys {
            invocation.key(key);
        }
        invocation.arg(args);
        let result = node
            .run(deadline, |mut c| async move {
                invocation.invoke_async::<Value>(&mut c).await
            })
            .await;
        if let (Conn::Cluster(cluster), Err(e)) = (self, &result) {
            cluster.note_error(e);
        }
        result
    }

    /// Runs `script` on every call, answering in order, each reply or why there is none. Calls
    /// go as pipelines of at most `pace.chunk`, one chunk after another, each with the whole
    /// deadline; on a Cluster one such sequence per node, the nodes at once. When a chunk
    /// fails, the later chunks of that node are not sent ([`Error::Unavailable`]).
    pub(crate) async fn invoke_many(
        &self,
        script: &Script,
        calls: &[Call],
        pace: Pace,
    ) -> Vec<Result<Value, Error>> {
        match self {
            Conn::Single(node) => run_chunks(node, script, calls, pace).await,
            Conn::Cluster(cluster) => {
                let groups = cluster.group(calls.iter().map(|c| c.key.as_str()));
                let mut replies: Vec<Result<Value, Error>> = Vec::with_capacity(calls.len());
                replies.resize_with(calls.len(), || Ok(Value::Nil));
                let mut tasks = Vec::new();
                for (node, indices) in groups {
                    let node = match node {
                        Ok(node) => node,
                        Err(e) => {
                            for i in indices {
                                replies[i] = Err(Error::Unavailable(e.to_string()));
                            }
                            continue;
                        }
                    };
                    let mine: Vec<Call> = indices.iter().map(|&i| calls[i].clone()).collect();
                    let script = script.clone();
                    tasks.push((
                        indices,
                        tokio::spawn(async move { run_chunks(&node, &script, &mine, pace).await }),
                    ));
                }
                for (indices, task) in tasks {
                    let answers = match task.await {
                        Ok(answers) => answers,
                        Err(e) => indices
                            .iter()
                            .map(|_| Err(Error::Unavailable(format!("batch task failed: {e}"))))
                            .collect(),
                    };
                    for (i, answer) in indices.into_iter().zip(answers) {
                        if let Ok(reply) = &answer {
                            cluster.note_reply(reply);
                        }
                        replies[i] = answer;
                    }
                }
                replies
            }
        }
    }
}

/// The calls on one node as EVALSHA pipelines of at most `pace.chunk`, one after another,
/// errors kept per call. Calls the server answered NOSCRIPT (they did not run) are sent again
/// once, right after the script is loaded, before the next chunk.
async fn run_chunks(
    node: &Node,
    script: &Script,
    calls: &[Call],
    pace: Pace,
) -> Vec<Result<Value, Error>> {
    let mut replies = Vec::with_capacity(calls.len());
    let mut failed: Option<String> = None;
    for chunk in calls.chunks(pace.chunk.max(1)) {
        if let Some(why) = &failed {
            replies.extend(chunk.iter().map(|_| {
                Err(Error::Unavailable(format!(
                    "not sent: an earlier part of this batch failed ({why})"
                )))
            }));
            continue;
        }
        let mut answers = pipeline(node, script, chunk, pace.deadline).await;
        let missing: Vec<usize> = (0..answers.len())
            .filter(|&i| matches!(&answers[i], Ok(reply) if is_noscript(reply)))
            .collect();
        if !missing.is_empty() {
            let again: Vec<Call> = missing.iter().map(|&i| chunk[i].clone()).collect();
            let loaded = node
                .run(pace.deadline, |mut c| async move {
                    script.load_async(&mut c).await
                })
                .await;
            let resent = match loaded {
                Ok(_) => pipeline(node, script, &again, pace.deadline).await,
                Err(e) => again.iter().map(|_| Err(e.clone())).collect(),
            };
            for (i, answer) in missing.into_iter().zip(resent) {
                answers[i] = answer;
            }
        }
        if let Some(Err(e)) = answers.iter().find(|a| a.is_err()) {
            failed = Some(e.to_string());
        }
        replies.extend(answers);
    }
    replies
}

/// One pipeline of `calls`, within `deadline`: a reply (or error reply) per call, or the
/// pipeline's error for every call.
async fn pipeline(
    node: &Node,
    script: &Script,
    calls: &[Call],
    deadline: Duration,
) -> Vec<Result<Value, Error>> {
    let pipe = evalsha_pipeline(script, calls);
    let answer = node
        .run(deadline, |mut c| async move {
            pipe.query_async::<Vec<Value>>(&mut c).await
        })
        .await;
    match answer {
        Ok(values) if values.len() == calls.len() => values.into_iter().map(Ok).collect(),
        Ok(values) => {
            let why = format!("{} replies to {} calls", values.len(), calls.len());
            calls
                .iter()
                .map(|_| Err(Error::UnexpectedReply(why.clone())))
                .collect()
        }
        // Every call of the pipeline shares its fate.
        Err(e) => calls.iter().map(|_| Err(e.clone())).collect(),
    }
}

fn evalsha_pipeline(script: &Script, calls: &[Call]) -> redis::Pipeline {
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
