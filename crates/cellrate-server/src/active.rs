//! The config in force and the buckets of its rules: what one request reads, swapped whole by
//! a reload.
//!
//! A reload builds a new `Active` beside the old one. A rule whose domain, place in the tree
//! and quota are unchanged takes the old rule's buckets (the same table: every key keeps its
//! state); any other rule gets new buckets, every key full. Requests in flight finish on the
//! `Active` they started with; the old one is freed when the last of them ends.

use crate::config::{Config, Limit, Unit};
use crate::counts::RuleStats;
use crate::storage::{Buckets, Store};
use cellrate::Quota;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

/// The config in force, with each rule's buckets and counts.
pub(crate) struct Active {
    pub config: Config,
    /// Per rule of `config.rules`, in its order.
    pub rules: Vec<RuleState>,
    /// The tables of per-call limit overrides, per domain.
    pub overrides: HashMap<Arc<str>, Arc<Overrides>>,
    /// When this config was applied.
    pub applied_at: SystemTime,
}

/// A rule's buckets (none for `unlimited` and blocked rules) and counts.
pub(crate) struct RuleState {
    pub buckets: Option<Arc<Buckets>>,
    pub stats: Arc<RuleStats>,
}

/// The buckets of a domain's per-call limit overrides: one table per distinct
/// `(requests_per_unit, unit)`, at most `max` of them, made when first asked for.
pub(crate) struct Overrides {
    domain: Arc<str>,
    tables: RwLock<HashMap<(u32, Unit), Arc<Buckets>>>,
    max: usize,
    pub stats: Arc<RuleStats>,
}

/// Why an override has no buckets.
pub(crate) enum OverrideError {
    /// The domain holds `max` overrides already.
    TooMany(usize),
    /// The override's quota cannot be held.
    Quota(cellrate::QuotaError),
}

impl Overrides {
    /// The buckets of `requests_per_unit` per `unit` (not 0), made if new.
    pub fn buckets(
        &self,
        store: &Store,
        requests_per_unit: u32,
        unit: Unit,
    ) -> Result<Arc<Buckets>, OverrideError> {
        let key = (requests_per_unit, unit);
        if let Some(found) = self.read().get(&key) {
            return Ok(found.clone());
        }
        let quota = override_quota(requests_per_unit, unit).map_err(OverrideError::Quota)?;
        let mut tables = self.tables.write().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = tables.get(&key) {
            return Ok(found.clone());
        }
        if tables.len() >= self.max {
            return Err(OverrideError::TooMany(self.max));
        }
        let id = format!(
            "{}\0override:{}/{}",
            self.domain,
            requests_per_unit,
            unit.name()
        );
        let made = Arc::new(store.buckets(quota, &id));
        tables.insert(key, made.clone());
        Ok(made)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<(u32, Unit), Arc<Buckets>>> {
        self.tables.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The override tables held.
    pub fn each(&self) -> Vec<((u32, Unit), Arc<Buckets>)> {
        self.read().iter().map(|(k, v)| (*k, v.clone())).collect()
    }
}

/// The quota of an override: `n` per `unit`, burst `n`.
pub(crate) fn override_quota(n: u32, unit: Unit) -> Result<Quota, cellrate::QuotaError> {
    let period_ns = u64::try_from(unit.duration().as_nanos()).unwrap_or(u64::MAX);
    let interval = std::time::Duration::from_nanos(period_ns.div_ceil(u64::from(n.max(1))));
    Quota::try_new(interval, n)
}

impl Active {
    /// The state for `config`, taking from `previous` the buckets of every rule whose identity
    /// is unchanged, the counts of every rule whose label is, and the override tables of
    /// every domain still configured.
    pub fn build(
        config: Config,
        previous: Option<&Active>,
        store: &Store,
        max_overrides: usize,
        detailed_limit: usize,
    ) -> Active {
        let mut old_buckets = HashMap::new();
        let mut old_stats = HashMap::new();
        if let Some(previous) = previous {
            for (rule, state) in previous.config.rules.iter().zip(&previous.rules) {
                if let (Some(identity), Some(buckets)) = (rule.identity(), &state.buckets) {
                    old_buckets.insert(identity, buckets.clone());
                }
                old_stats.insert(
                    (rule.domain.clone(), rule.label().to_owned()),
                    state.stats.clone(),
                );
            }
        }
        let rules = config
            .rules
            .iter()
            .map(|rule| {
                let buckets = match (&rule.limit, rule.identity()) {
                    (Limit::Bucket { quota, .. }, Some(identity)) => {
                        Some(old_buckets.get(&identity).cloned().unwrap_or_else(|| {
                            let id = format!("{}\0{}", rule.domain, rule.path);
                            Arc::new(store.buckets(*quota, &id))
                        }))
                    }
                    _ => None,
                };
                let label = (rule.domain.clone(), rule.label().to_owned());
                let stats = old_stats.get(&label).cloned().unwrap_or_else(|| {
                    let limit = if rule.detailed_metric {
                        detailed_limit
                    } else {
                        0
                    };
                    Arc::new(RuleStats::new(limit))
                });
                RuleState { buckets, stats }
            })
            .collect();
        let overrides = config
            .domains
            .keys()
            .map(|domain| {
                let kept = previous.and_then(|p| p.overrides.get(domain)).cloned();
                let overrides = kept.unwrap_or_else(|| {
                    Arc::new(Overrides {
                        domain: domain.clone(),
                        tables: RwLock::new(HashMap::new()),
                        max: max_overrides,
                        stats: Arc::new(RuleStats::new(0)),
                    })
                });
                (domain.clone(), overrides)
            })
            .collect();
        Active {
            config,
            rules,
            overrides,
            applied_at: SystemTime::now(),
        }
    }
}
