//! A Redis Cluster: the slot map from `CLUSTER SLOTS`, one health-checked [`Node`] per primary,
//! redirects followed, and the map refreshed in the background while a node is down or after a
//! reply said a slot moved. Batches are grouped by node, one pipeline per node.
//!
//! `ASK`, `MOVED` and `TRYAGAIN` all mean the script did not run, so acting on them never
//! charges twice. `ASK` (a slot being migrated, the key not on the source) is followed once,
//! with `ASKING`, to the node named; it says nothing about the map. `MOVED` is followed once
//! too, and marks the map stale. `TRYAGAIN` (the keys of one script split across the two
//! nodes of a migration, or some of them on neither) is sent again after a pause, within the
//! call's deadline; keys on neither node are first written on the importing one as the absent
//! buckets they are (`importing.rs`).

use super::connector::Connector;
use super::error::Error;
use super::node::Node;
use super::node_script::{self as conn, Call, Pace};
use super::options::RedisOptions;
use super::slot_map::{self, SlotMap};

mod importing;
mod refresh;
use redis::cluster_routing::Slot;
use redis::{ConnectionInfo, Script, Value};
use refresh::watch;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// The first pause before a `TRYAGAIN` call is sent again; it doubles each time.
const TRYAGAIN_PAUSE: Duration = Duration::from_millis(2);

/// A cheap-to-clone handle on a Cluster's nodes.
#[derive(Clone)]
pub(crate) struct Cluster {
    inner: Arc<Inner>,
}

struct Inner {
    /// The seed's connection settings (credentials, database, protocol, TLS); nodes differ in
    /// address only.
    template: ConnectionInfo,
    options: RedisOptions,
    map: RwLock<Arc<SlotMap>>,
    /// Nodes a redirect named that the map does not (yet) list, by `host:port`.
    strays: Mutex<HashMap<String, Node>>,
    /// Set when a reply said the map is out of date (`MOVED`).
    stale: AtomicBool,
}

impl Cluster {
    /// Connects through the first seed that answers and reads the slot map from it.
    pub(crate) async fn connect(urls: &[&str], options: &RedisOptions) -> Result<Cluster, Error> {
        let mut last = Error::Unavailable("no seed node given".to_owned());
        for url in urls {
            let client = conn::client(url, options)?;
            let template = client.get_connection_info().clone();
            let seed = match Node::connect(Connector::fixed(client), options).await {
                Ok(node) => node,
                Err(e) => {
                    last = e;
                    continue;
                }
            };
            let inner = Arc::new(Inner {
                template,
                options: options.clone(),
                map: RwLock::new(Arc::new(SlotMap::seed(seed.clone()))),
                strays: Mutex::new(HashMap::new()),
                stale: AtomicBool::new(false),
            });
            match inner.refresh_from(&seed).await {
                Ok(()) => {
                    tokio::spawn(watch(Arc::downgrade(&inner)));
                    return Ok(Cluster { inner });
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// The primaries of the map.
    pub(crate) fn nodes(&self) -> Vec<Node> {
        self.inner.current().nodes().to_vec()
    }

    /// The node serving `key`'s slot.
    fn node_for(&self, key: &str) -> Result<Node, Error> {
        match self.inner.current().node_for(key) {
            Some(node) => Ok(node),
            None => {
                self.mark_stale();
                Err(Error::Unavailable(format!(
                    "no cluster node serves the slot of {key:?} (the slot map is being refreshed)"
                )))
            }
        }
    }

    /// Whether all `keys` hash to one slot.
    fn same_slot(keys: &[String]) -> bool {
        keys.windows(2)
            .all(|pair| Slot::for_key(&pair[0]) == Slot::for_key(&pair[1]))
    }

    /// One script call on the node of its keys' slot, following one redirect and sending a
    /// `TRYAGAIN` again until the deadline. `first_sight`, for a script of several keys, writes
    /// a key as its absence stands for (see `importing.rs`): on a node importing the slot,
    /// the keys the source does not hold either are written with it before the call.
    pub(crate) async fn invoke(
        &self,
        script: &Arc<Script>,
        keys: &[String],
        args: &[i64],
        deadline: Duration,
        first_sight: Option<&Arc<Script>>,
    ) -> Result<Value, Error> {
        if !Cluster::same_slot(keys) {
            return Err(Error::CrossSlot(keys.to_vec()));
        }
        let started = Instant::now();
        let mut pause = TRYAGAIN_PAUSE;
        let mut node = self.node_for(keys.first().map_or("", String::as_str))?;
        // The node that answered ASK: the slot is migrating from it to `node`.
        let mut source: Option<Node> = None;
        let mut redirected = false;
        // Whether the keys the source lacks are written on `node` before each call.
        let mut first_sights = false;
        loop {
            let left = deadline.saturating_sub(started.elapsed());
            let result = match first_sight.filter(|_| first_sights) {
                Some(first) => {
                    importing::run_after_first_sights(&node, first, script, keys, args, left).await
                }
                None => conn::run_script(&node, script, keys, args, left, source.is_some()).await,
            };
            let Err(Error::Redis(e)) = &result else {
                return result;
            };
            match Redirect::of(e) {
                Some(Redirect::Ask(addr)) if !redirected => {
                    source = Some(node);
                    (node, redirected) = (self.node_at(&addr)?, true);
                }
                Some(Redirect::Moved(addr)) if !redirected => {
                    self.mark_stale();
                    (node, redirected) = (self.node_at(&addr)?, true);
                }
                Some(Redirect::TryAgain) if started.elapsed() + pause < deadline => {
                    // The importing node lacks some keys: if the source lacks them all too,
                    // they are absent buckets, written there before the call is sent again
                    // (at once); if it holds some, they are waited for.
                    if let (Some(source), Some(_), false) = (&source, first_sight, first_sights) {
                        let left = deadline.saturating_sub(started.elapsed());
                        first_sights = importing::source_holds_none(source, keys, left).await?;
                        if first_sights {
                            continue;
                        }
                    }
                    tokio::time::sleep(pause).await;
                    pause = pause.saturating_mul(2);
                }
                Some(Redirect::Moved(_)) => {
                    self.mark_stale();
                    return result;
                }
                _ => return result,
            }
        }
    }

    /// Many one-key calls, in order: grouped by node, each group as chunked pipelines, the
    /// nodes at once; then the calls redirected (`ASK`, `MOVED`) sent once more where the
    /// replies said, in one pipeline per node.
    pub(crate) async fn invoke_many(
        &self,
        script: &Arc<Script>,
        calls: &[Call],
        pace: Pace,
    ) -> Vec<Result<Value, Error>> {
        let map = self.inner.current();
        let groups = map.group(calls.iter().map(|c| c.key.as_str()));
        let mut replies: Vec<Result<Value, Error>> = Vec::with_capacity(calls.len());
        replies.resize_with(calls.len(), || Ok(Value::Nil));
        let mut sends = Vec::new();
        for (node, indices) in groups {
            match node {
                Some(node) => sends.push((node, indices)),
                None => {
                    self.mark_stale();
                    let why = "no cluster node serves this key's slot (the map is being refreshed)";
                    for i in indices {
                        replies[i] = Err(Error::Unavailable(why.to_owned()));
                    }
                }
            }
        }
        self.send_groups(script, calls, sends, pace, false, &mut replies)
            .await;
        // The calls redirected, by the node and the kind of redirect.
        let mut again: HashMap<(String, bool), Vec<usize>> = HashMap::new();
        for (i, reply) in replies.iter().enumerate() {
            let Ok(Value::ServerError(e)) = reply else {
                continue;
            };
            match Redirect::of(&redis::RedisError::from(e.clone())) {
                Some(Redirect::Ask(addr)) => again.entry((addr, true)).or_default().push(i),
                Some(Redirect::Moved(addr)) => {
                    self.mark_stale();
                    again.entry((addr, false)).or_default().push(i);
                }
                _ => {}
            }
        }
        let mut resend = Vec::new();
        for ((addr, asking), indices) in again {
            match self.node_at(&addr) {
                Ok(node) => resend.push(((node, asking), indices)),
                Err(e) => indices.iter().for_each(|&i| replies[i] = Err(e.clone())),
            }
        }
        for ((node, asking), indices) in resend {
            self.send_groups(
                script,
                calls,
                vec![(node, indices)],
                pace,
                asking,
                &mut replies,
            )
            .await;
        }
        replies
    }

    /// Sends each group of calls to its node (the nodes at once) and puts the answers in
    /// `replies`.
    async fn send_groups(
        &self,
        script: &Arc<Script>,
        calls: &[Call],
        groups: Vec<(Node, Vec<usize>)>,
        pace: Pace,
        asking: bool,
        replies: &mut [Result<Value, Error>],
    ) {
        let mut tasks = Vec::new();
        for (node, indices) in groups {
            let mine: Vec<Call> = indices.iter().map(|&i| calls[i].clone()).collect();
            let script = Arc::clone(script);
            tasks.push((
                indices,
                tokio::spawn(
                    async move { conn::run_chunks(&node, &script, &mine, pace, asking).await },
                ),
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
                replies[i] = answer;
            }
        }
    }

    /// The node at `host:port`: one of the map's, or a stray made for a redirect.
    fn node_at(&self, addr: &str) -> Result<Node, Error> {
        if let Some(node) = self.inner.current().node_at(addr) {
            return Ok(node);
        }
        let mut strays = self.inner.strays.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(node) = strays.get(addr) {
            return Ok(node.clone());
        }
        let (host, port) = slot_map::split_addr(addr)
            .ok_or_else(|| Error::UnexpectedReply(format!("a redirect to {addr:?}")))?;
        let node = self.inner.node_at(host, port)?;
        strays.insert(addr.to_owned(), node.clone());
        Ok(node)
    }

    fn mark_stale(&self) {
        // Relaxed: a hint for the watcher, which reads the map under its lock.
        self.inner.stale.store(true, Ordering::Relaxed);
    }
}

/// What an error reply of a Cluster asks for.
enum Redirect {
    Ask(String),
    Moved(String),
    TryAgain,
}

impl Redirect {
    fn of(e: &redis::RedisError) -> Option<Redirect> {
        let addr = || {
            e.redirect_node()
                .map(|(addr, _slot)| addr.to_owned())
                .filter(|a| !a.is_empty())
        };
        match e.code()? {
            "ASK" => addr().map(Redirect::Ask),
            "MOVED" => addr().map(Redirect::Moved),
            "TRYAGAIN" => Some(Redirect::TryAgain),
            _ => None,
        }
    }
}
