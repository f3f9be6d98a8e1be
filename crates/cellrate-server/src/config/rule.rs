//! A rule: the limit of one descriptor of the config tree, and what a status reports of it.

use super::unit::Unit;
use cellrate::Quota;
use std::sync::Arc;

/// The limit a status reports as `current_limit`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reported {
    /// `requests_per_unit`.
    pub requests_per_unit: u32,
    /// `unit`.
    pub unit: Unit,
}

/// What a rule does with the descriptors it matches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    /// `unlimited: true`: always OK, nothing counted in a bucket.
    Unlimited,
    /// `requests_per_unit: 0`: always OVER_LIMIT, as the reference server answers.
    Blocked {
        /// What `current_limit` says.
        reported: Reported,
    },
    /// A GCRA bucket per distinct descriptor.
    Bucket {
        /// The bucket's quota: rate `requests_per_unit` per unit (or per `per`), burst
        /// `burst` (default `requests_per_unit`).
        quota: Quota,
        /// What `current_limit` says.
        reported: Reported,
    },
}

/// One `rate_limit` of the config tree.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The domain it belongs to.
    pub domain: Arc<str>,
    /// Its composite key, the reference server's: the domain, then each descriptor's `key` or
    /// `key_value` down the tree, joined by dots (`edge.remote_address.path_/login`).
    pub path: String,
    /// `rate_limit.name`, if any.
    pub name: Option<String>,
    /// The limit.
    pub limit: Limit,
    /// `shadow_mode`: decided and spent as if enforced, never refusing a request.
    pub shadow: bool,
    /// `detailed_metric` or `value_to_metric`: metrics labelled by the descriptor's values too
    /// (bounded).
    pub detailed_metric: bool,
    /// `replaces`: the names of the rules this one replaces when both match one request.
    pub replaces: Vec<String>,
}

impl Rule {
    /// The label of its metrics: its `name`, else its composite key.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.path)
    }

    /// What makes a bucket of this rule the same bucket after a reload: the domain, the place
    /// in the tree and the quota. A rule whose identity is unchanged keeps its buckets.
    pub fn identity(&self) -> Option<(Arc<str>, String, Quota)> {
        match &self.limit {
            Limit::Unlimited | Limit::Blocked { .. } => None,
            Limit::Bucket { quota, .. } => Some((self.domain.clone(), self.path.clone(), *quota)),
        }
    }
}
