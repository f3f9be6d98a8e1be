//! The descriptor tree of a domain, and how a request's descriptor finds its rule in it: the
//! reference server's walk. At each entry, the node of `key` with that `value`, else the first
//! wildcard (`value: "foo*"`) whose prefix the value starts with, else the node of `key`
//! without a value; the rule is the one of the node reached at the last entry; the walk stops
//! early at a node without children or when nothing matches.

use std::collections::HashMap;

/// The children of a node (or the domain's top level), by entry key.
#[derive(Debug, Default)]
pub(crate) struct Level {
    pub keys: HashMap<String, KeyNodes>,
}

/// The nodes of one entry key at one level.
#[derive(Debug, Default)]
pub(crate) struct KeyNodes {
    /// `value: v`.
    pub exact: HashMap<String, Node>,
    /// `value: "prefix*"`, in the order of the file.
    pub wildcards: Vec<(String, Node)>,
    /// No `value`: every value, each with its own bucket.
    pub any: Option<Node>,
}

/// One descriptor of the tree.
#[derive(Debug, Default)]
pub(crate) struct Node {
    /// The index of its rule in [`Config::rules`](super::Config), if it has a `rate_limit`.
    pub rule: Option<usize>,
    /// A wildcard whose values share one bucket (`share_threshold`).
    pub shared: bool,
    pub children: Level,
}

/// How a request's entry was matched: whether its value tells buckets of the rule apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Matched {
    /// By its exact value, or a shared wildcard: the same for every request that gets here.
    Fixed,
    /// By a node without value or a wildcard without `share_threshold`: one bucket per value.
    PerValue,
}

impl Level {
    /// The rule a descriptor's entries reach, and how each entry up to it was matched.
    pub fn find<'e, E>(&self, entries: E, matched: &mut Vec<Matched>) -> Option<usize>
    where
        E: ExactSizeIterator<Item = (&'e str, &'e str)>,
    {
        matched.clear();
        let last = entries.len().checked_sub(1)?;
        let mut level = self;
        for (i, (key, value)) in entries.enumerate() {
            let (node, how) = level.keys.get(key)?.find(value)?;
            matched.push(how);
            if i == last {
                return node.rule;
            }
            if node.children.keys.is_empty() {
                return None;
            }
            level = &node.children;
        }
        None
    }
}

impl KeyNodes {
    fn find(&self, value: &str) -> Option<(&Node, Matched)> {
        if let Some(node) = self.exact.get(value) {
            return Some((node, Matched::Fixed));
        }
        if let Some((_, node)) = self
            .wildcards
            .iter()
            .find(|(prefix, _)| value.starts_with(prefix.as_str()))
        {
            let how = if node.shared {
                Matched::Fixed
            } else {
                Matched::PerValue
            };
            return Some((node, how));
        }
        self.any.as_ref().map(|node| (node, Matched::PerValue))
    }
}
