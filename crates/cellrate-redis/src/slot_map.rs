//! Which primary serves each of a Cluster's 16,384 slots, from a `CLUSTER SLOTS` reply.

use super::error::Error;
use super::node::Node;
use redis::cluster_routing::Slot;
use redis::Value;
use std::collections::HashMap;

/// Number of hash slots of a Redis Cluster.
const SLOTS: u16 = 16384;

/// The primaries and the slots each serves.
pub(crate) struct SlotMap {
    nodes: Vec<Node>,
    owner: HashMap<Slot, usize>,
}

/// `(first slot, last slot, host, port)` of a range's primary.
pub(crate) type Range = (u16, u16, String, u16);

impl SlotMap {
    /// A map that knows only the seed and no slot yet.
    pub(crate) fn seed(seed: Node) -> SlotMap {
        SlotMap {
            nodes: vec![seed],
            owner: HashMap::new(),
        }
    }

    /// The map of `ranges`, each primary's node from `node(host, port)` (called once per
    /// primary).
    pub(crate) fn build(
        ranges: Vec<Range>,
        mut node: impl FnMut(&str, u16) -> Result<Node, Error>,
    ) -> Result<SlotMap, Error> {
        let mut nodes: Vec<Node> = Vec::new();
        let mut index: HashMap<(String, u16), usize> = HashMap::new();
        let mut owner = HashMap::with_capacity(usize::from(SLOTS));
        for (start, end, host, port) in ranges {
            let i = match index.get(&(host.clone(), port)) {
                Some(&i) => i,
                None => {
                    nodes.push(node(&host, port)?);
                    index.insert((host, port), nodes.len() - 1);
                    nodes.len() - 1
                }
            };
            for slot in start..=end.min(SLOTS - 1) {
                owner.insert(Slot::new(slot).expect("below 16384"), i);
            }
        }
        Ok(SlotMap { nodes, owner })
    }

    pub(crate) fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node serving `key`'s slot.
    pub(crate) fn node_for(&self, key: &str) -> Option<Node> {
        let i = *self.owner.get(&Slot::for_key(key))?;
        Some(self.nodes[i].clone())
    }

    /// The node at `host:port`, if it is one of the map's.
    pub(crate) fn node_at(&self, addr: &str) -> Option<Node> {
        self.nodes.iter().find(|n| n.addr() == addr).cloned()
    }

    /// The keys' indices grouped by the node that serves them, in order within each group;
    /// `None` for the keys whose slot no node serves.
    pub(crate) fn group<'k>(
        &self,
        keys: impl Iterator<Item = &'k str>,
    ) -> Vec<(Option<Node>, Vec<usize>)> {
        let mut by_node: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut unserved = Vec::new();
        for (i, key) in keys.enumerate() {
            match self.owner.get(&Slot::for_key(key)) {
                Some(&node) => by_node.entry(node).or_default().push(i),
                None => unserved.push(i),
            }
        }
        let mut groups: Vec<_> = by_node
            .into_iter()
            .map(|(node, indices)| (Some(self.nodes[node].clone()), indices))
            .collect();
        if !unserved.is_empty() {
            groups.push((None, unserved));
        }
        groups
    }
}

/// `host` and `port` of `host:port` (`[v6]:port` too).
pub(crate) fn split_addr(addr: &str) -> Option<(&str, u16)> {
    let (host, port) = addr.rsplit_once(':')?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    Some((host, port.parse().ok()?))
}

/// The ranges of a `CLUSTER SLOTS` reply. An empty host means the node that answered.
pub(crate) fn parse_slots(reply: &Value, asked: &str) -> Result<Vec<Range>, Error> {
    let bad = || Error::UnexpectedReply(format!("CLUSTER SLOTS: {reply:?}"));
    let Value::Array(ranges) = reply else {
        return Err(bad());
    };
    let asked_host = split_addr(asked).map_or(asked, |(h, _)| h);
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
