//! A rule's counts: its descriptors' statuses by outcome, and by descriptor value for a rule
//! with `detailed_metric` (at most `--detailed-metric-limit` values; the rest are `_other`).
//! They live beside the rule's buckets in the config in force (`active.rs`) and are rendered
//! by `metrics.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// What a descriptor's status was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ok = 0,
    OverLimit = 1,
    /// A shadow rule that would have refused.
    ShadowOverLimit = 2,
}

pub(crate) const OUTCOMES: [&str; 3] = ["ok", "over_limit", "shadow_over_limit"];

// Relaxed throughout: each counter is read alone, for a scrape; no count orders other memory.

/// Counts by descriptor value (`detailed_metric`), by outcome.
type Detailed = Mutex<HashMap<String, [u64; 3]>>;

/// A rule's decisions, by outcome.
pub(crate) struct RuleStats {
    counts: [AtomicU64; 3],
    /// `detailed_metric`: counts per descriptor value, at most `limit` values.
    detailed: Option<(usize, Detailed)>,
}

impl RuleStats {
    /// Counts without values (`detailed_limit` 0), or with up to `detailed_limit` of them.
    pub fn new(detailed_limit: usize) -> RuleStats {
        RuleStats {
            counts: Default::default(),
            detailed: (detailed_limit > 0).then(|| (detailed_limit, Mutex::new(HashMap::new()))),
        }
    }

    /// The statuses of outcome `i` (`Outcome as usize`).
    pub fn count_of(&self, i: usize) -> u64 {
        self.counts[i].load(Ordering::Relaxed)
    }

    /// The counts per value, if the rule is detailed.
    pub fn by_value(&self) -> Vec<(String, [u64; 3])> {
        match &self.detailed {
            Some((_, map)) => {
                let map = map.lock().unwrap_or_else(|e| e.into_inner());
                map.iter().map(|(v, c)| (v.clone(), *c)).collect()
            }
            None => Vec::new(),
        }
    }

    /// Whether counts are kept per value too.
    pub fn detailed(&self) -> bool {
        self.detailed.is_some()
    }

    /// Counts one status, and under `value` if the rule is detailed.
    pub fn count(&self, outcome: Outcome, value: Option<&str>) {
        self.counts[outcome as usize].fetch_add(1, Ordering::Relaxed);
        if let (Some((limit, map)), Some(value)) = (&self.detailed, value) {
            let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
            let key = if map.contains_key(value) || map.len() < *limit {
                value
            } else {
                "_other"
            };
            map.entry(key.to_owned()).or_default()[outcome as usize] += 1;
        }
    }
}
