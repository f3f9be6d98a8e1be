//! A Redis Cluster: the slot map from `CLUSTER SLOTS`, one health-checked [`Node`] per primary,
//! and the map refreshed in the background while a node is down or after a reply said a slot
//! moved. Batches are grouped by node, one pipeline per node.

use super::error::Error;
use super::node::Node;
use super::options::RedisOptions;
use redis::cluster_routing::Slot;
use redis::{Client, ConnectionAddr, ConnectionInfo, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, Weak};

/// Number of hash slots of a Redis Cluster.
const SLOTS: u16 = 16384;

/// A cheap-to-clone handle on a Cluster's nodes.
#[derive(Clone)]
pub(crate) struct Cluster {
    inner: Arc<Inner>,
}

struct Inner {
    /// The seed's connection settings (credentials, database, protocol); nodes differ in
    /// address only.
    template: ConnectionInfo,
    options: RedisOptions,
    map: RwLock<Arc<SlotMap>>,
    /// Set when a reply said the map is out of date (MOVED, ASK, CLUSTERDOWN).
    stale: AtomicBool,
}

/// Which primary serves each slot.
struct SlotMap {
    nodes: Vec<Node>,
    owner: HashMap<Slot, usize>,
}

impl Cluster {
    /// Connects through the first seed that answers and reads the slot map from it.
    pub(crate) async fn connect(urls: &[&str], options: &RedisOptions) -> Result<Cluster, Error> {
        let mut last = Error::Unavailable("no seed node given".to_owned());
        for url in urls {
            let client = Client::open(*url)?;
            let template = client.get_connection_info().clone();
            let seed = match Node::connect(client, options).await {
                Ok(node) => node,
                Err(e) => {
                    last = e;
                    continue;
                }
            };
            let inner = Arc::new(Inner {
                template,
                options: options.clone(),
                map: RwLock::new(Arc::new(SlotMap {
                    nodes: vec![seed.clone()],
                    owner: HashMap::new(),
                })),
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

    /// The node serving `key`'s slot.
    pub(crate) fn node_for(&self, key: &str) -> Result<Node, Error> {
        let map = self.inner.current();
        match map.owner.get(&Slot::for_key(key)) {
            Some(&i) => Ok(map.nodes[i].clone()),
            None => {
                self.mark_stale();
                Err(Error::Unavailable(format!(
                    "no cluster node serves the slot of {key:?} (the slot map is being refreshed)"
                )))
            }
        }
    }

    /// The calls' indices grouped by the node that serves them, in order within each group.
    pub(crate) fn group<'k>(
        &self,
        keys: impl Iterator<Item = &'k str>,
    ) -> Vec<(Result<Node, Error>, Vec<usize>)> {
        let map = self.inner.current();
        let mut by_node: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut unserved = Vec::new();
        for (i, key) in keys.enumerate() {
            match map.owner.get(&Slot::for_key(key)) {
                Some(&node) => by_node.entry(node).or_default().push(i),
                None => unserved.push(i),
            }
        }
        let mut groups: Vec<_> = by_node
            .into_iter()
            .map(|(node, indices)| (Ok(map.nodes[node].clone()), indices))
            .collect();
        if !unserved.is_empty() {
            self.mark_stale();
            let why = "no cluster node serves these keys' slots (the slot map is being refreshed)";
            groups.push((Err(Error::Unavailable(why.to_owned())), unserved));
        }
        groups
    }

    /// Whether all `keys` hash to one slot.
    pub(crate) fn same_slot(keys: &[String]) -> bool {
        keys.windows(2)
            .all(|pair| Slot::for_key(&pair[0]) == Slot::for_key(&pair[1]))
    }

    /// Notes a reply that says the slot map is out of date; the watcher refreshes it.
    pub(crate) fn note_reply(&self, reply: &Value) {
        if let Value::ServerError(e) = reply {
            if is_redirect(e.code()) {
                self.mark_stale();
            }
        }
    }

    /// Notes an error that says the slot map is out of date.
    pub(crate) fn note_error(&self, error: &Error) {
        if let Error::Redis(e) = error {
            if is_redirect(e.code().unwrap_or_default()) {
                self.mark_stale();
            }
        }
    }

    fn mark_stale(&self) {
        // Relaxed: a hint for the watcher, which reads the map under its lock.
        self.inner.stale.store(true, Ordering::Relaxed);
    }
}

fn is_redirect(code: &str) -> bool {
    matches!(code, "MOVED" | "ASK" | "CLUSTERDOWN" | "TRYAGAIN")
}

impl Inner {
    fn current(&self) -> Arc<SlotMap> {
        self.map.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Reads `CLUSTER SLOTS` from `node` and installs the map, keeping the nodes (and their
    /// connections) that are still primaries.
    async fn refresh_from(&self, node: &Node) -> Result<(), Error> {
        let deadline = self.options.deadline.max(self.options.connection_timeout);
        let reply: Value = node
            .run(deadline, |mut c| async move {
                redis::cmd("CLUSTER").arg("SLOTS").query_async(&mut c).await
            })
            .await?;
        let ranges = parse_slots(&reply, node.addr())?;
        let old = self.current();
        let mut nodes: Vec<Node> = Vec::new();
        let mut index: HashMap<(String, u16), usize> = HashMap::new();
        let mut owner = HashMap::with_capacity(usize::from(SLOTS));
        for (start, end, host, port) in ranges {
            let i = match index.get(&(host.clone(), port)) {
                Some(&i) => i,
                None => {
                    let addr = format!("{host}:{port}");
                    let node = match old.nodes.iter().find(|n| n.addr() == addr) {
                        Some(n) => n.clone(),
                        None => self.node_at(&host, port)?,
                    };
                    nodes.push(node);
                    index.insert((host, port), nodes.len() - 1);
                    nodes.len() - 1
                }
            };
            for slot in start..=end.min(SLOTS - 1) {
                owner.insert(Slot::new(slot).expect("below 16384"), i);
            }
        }
        *self.map.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(SlotMap { nodes, owner });
        Ok(())
    }

    /// A node at `host:port` with the seed's settings, connecting in the background.
    fn node_at(&self, host: &str, port: u16) -> Result<Node, Error> {
        let addr = match self.template.addr() {
            ConnectionAddr::Tcp(..) => ConnectionAddr::Tcp(host.to_owned(), port),
            other => {
                return Err(Error::Unavailable(format!(
                    "cluster nodes over {other} are not supported; use redis://host:port seeds"
                )))
            }
        };
        let client = Client::open(self.template.clone().set_addr(addr))?;
        Ok(Node::connect_lazy(client, &self.options))
    }
}

/// Refreshes the slot map every probe interval while a reply said it is out of date or a node
/// is down (a replica may have been promoted in its place). Ends with the limiter.
async fn watch(cluster: Weak<Inner>) {
    loop {
        let Some(inner) = cluster.upgrade() else {
            return;
        };
        let pause = inner.options.probe_interval;
        let map = inner.current();
        // Relaxed: see `Cluster::mark_stale`.
        if inner.stale.swap(false, Ordering::Relaxed) || map.nodes.iter().any(Node::is_down) {
            let mut refreshed = false;
            for node in map.nodes.iter().filter(|n| !n.is_down()) {
                if inner.refresh_from(node).await.is_ok() {
                    refreshed = true;
                    break;
                }
            }
            if !refreshed && map.nodes.iter().all(Node::is_down) {
                // Relaxed: see `Cluster::mark_stale`.
                inner.stale.store(true, Ordering::Relaxed);
            }
        }
        drop((inner, map));
        tokio::time::sleep(pause).await;
    }
}

/// `(first slot, last slot, host, port)` of each range's primary in a `CLUSTER SLOTS` reply.
/// An empty host means the node that answered.
fn parse_slots(reply: &Value, asked: &str) -> Result<Vec<(u16, u16, String, u16)>, Error> {
    let bad = || Error::UnexpectedReply(format!("CLUSTER SLOTS: {reply:?}"));
    let Value::Array(ranges) = reply else {
        return Err(bad());
    };
    let asked_host = asked.rsplit_once(':').map_or(asked, |(h, _)| h);
    let mut out = Vec::with_capacity(ranges.len());
    for range in ranges {
        let Value::Array(items) = range else {
            return Err(bad());
        };
        let [Value::Int(start), Value::Int(end), Value::Array(primary), ..] = items.as_slice()
        else {
            return Err(bad());
        };
        let [host, Value::Int(port), ..] = primary.as_slice() else {
            return Err(bad());
        };
        let host = match host {
            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            Value::SimpleString(s) => s.clone(),
            _ => return Err(bad()),
        };
        let host = if host.is_empty() || host == "?" {
            asked_host.to_owned()
        } else {
            host
        };
        let slot = |i: i64| u16::try_from(i).map_err(|_| bad());
        let port = u16::try_from(*port).map_err(|_| bad())?;
        out.push((slot(*start)?, slot(*end)?, host, port));
    }
    Ok(out)
}
