//! From parsed YAML to the descriptor tree and its rules, with the reference server's checks
//! (and cellrate's own for `burst` and `per`), each error at its line.

use super::error::ConfigError;
use super::rule::{Limit, Reported, Rule};
use super::tree::{Level, Node};
use super::unit::{self, Unit};
use super::yaml::{DescriptorYaml, FileYaml, RateLimitYaml};
use cellrate::Quota;
use serde_saphyr::Spanned;
use std::sync::Arc;
use std::time::Duration;

/// Adds the rules and tree of one parsed file; every error found goes to `errors`.
pub(crate) struct Builder<'a> {
    pub file: &'a str,
    pub rules: &'a mut Vec<Rule>,
    pub errors: &'a mut Vec<ConfigError>,
}

impl Builder<'_> {
    fn error<T>(&mut self, at: &Spanned<T>, key: &str, message: impl Into<String>) {
        self.errors.push(ConfigError {
            file: self.file.to_owned(),
            line: at.referenced.line(),
            column: at.referenced.column(),
            key: key.to_owned(),
            message: message.into(),
        });
    }

    /// The file's domain, or `None` (and an error) for an empty domain.
    pub fn domain(&mut self, file: &FileYaml) -> Option<Arc<str>> {
        if file.domain.value.is_empty() {
            self.error(
                &file.domain,
                "domain",
                "config file cannot have empty domain",
            );
            return None;
        }
        Some(Arc::from(file.domain.value.as_str()))
    }

    /// Adds the file's descriptors to its domain's top level `level`.
    pub fn descriptors(&mut self, domain: &Arc<str>, file: &FileYaml, level: &mut Level) {
        self.level(domain, domain, "", &file.descriptors, level);
    }

    fn level(
        &mut self,
        domain: &Arc<str>,
        parent: &str,
        at: &str,
        descriptors: &[Spanned<DescriptorYaml>],
        level: &mut Level,
    ) {
        for (i, spanned) in descriptors.iter().enumerate() {
            let here = format!("{at}descriptors[{i}]");
            let d = &spanned.value;
            if d.key.value.is_empty() {
                self.error(&d.key, &format!("{here}.key"), "descriptor has empty key");
                continue;
            }
            if let Some(quota_mode) = d.quota_mode.as_ref().filter(|q| q.value) {
                self.error(
                    quota_mode,
                    &format!("{here}.quota_mode"),
                    "quota_mode is not supported: cellrate-server decides every request with a \
                     token bucket (remove the line, or set it to false)",
                );
            }
            let value = d
                .value
                .as_ref()
                .map(|v| v.value.as_str())
                .filter(|v| !v.is_empty());
            let final_key = match value {
                Some(value) => format!("{}_{}", d.key.value, value),
                None => d.key.value.clone(),
            };
            let path = format!("{parent}.{final_key}");
            let nodes = level.keys.entry(d.key.value.clone()).or_default();
            let taken = match value {
                None => nodes.any.is_some(),
                Some(v) => match v.strip_suffix('*') {
                    Some(prefix) => nodes.wildcards.iter().any(|(p, _)| p == prefix),
                    None => nodes.exact.contains_key(v),
                },
            };
            if taken {
                self.error(
                    spanned,
                    &here,
                    format!("duplicate descriptor composite key '{path}'"),
                );
                continue;
            }
            let mut node = Node {
                shared: d.share_threshold,
                ..Node::default()
            };
            if let Some(rate_limit) = &d.rate_limit {
                let key = format!("{here}.rate_limit");
                if let Some(limit) = self.limit(rate_limit, &key) {
                    node.rule = Some(self.rules.len());
                    self.rules.push(Rule {
                        domain: domain.clone(),
                        path: path.clone(),
                        name: rate_limit.value.name.as_ref().map(|n| n.value.clone()),
                        limit,
                        shadow: d.shadow_mode,
                        detailed_metric: d.detailed_metric || d.value_to_metric,
                        replaces: rate_limit
                            .value
                            .replaces
                            .iter()
                            .map(|r| r.value.name.clone())
                            .collect(),
                    });
                }
            }
            self.level(
                domain,
                &path,
                &format!("{here}."),
                &d.descriptors,
                &mut node.children,
            );
            let nodes = level.keys.entry(d.key.value.clone()).or_default();
            match value {
                None => nodes.any = Some(node),
                Some(v) => match v.strip_suffix('*') {
                    Some(prefix) => nodes.wildcards.push((prefix.to_owned(), node)),
                    None => {
                        nodes.exact.insert(v.to_owned(), node);
                    }
                },
            }
        }
    }

    /// The limit of a `rate_limit`, or `None` after recording why it is wrong.
    fn limit(&mut self, spanned: &Spanned<RateLimitYaml>, key: &str) -> Option<Limit> {
        let r = &spanned.value;
        let before = self.errors.len();
        for (i, replaces) in r.replaces.iter().enumerate() {
            let at = format!("{key}.replaces[{i}]");
            if replaces.value.name.is_empty() {
                self.error(replaces, &at, "should not have an empty replaces entry");
            } else if r.name.as_ref().map(|n| &n.value) == Some(&replaces.value.name) {
                self.error(
                    replaces,
                    &at,
                    "replaces should not contain name of same descriptor",
                );
            }
        }
        if r.unlimited {
            if let Some(unit) = &r.unit {
                self.error(
                    unit,
                    &format!("{key}.unit"),
                    "should not specify rate limit unit when unlimited",
                );
            }
            return (self.errors.len() == before).then_some(Limit::Unlimited);
        }
        let requests = r.requests_per_unit.as_ref().map_or(0, |n| n.value);
        let period = match (&r.unit, &r.per) {
            (Some(unit), Some(_)) => {
                self.error(
                    unit,
                    &format!("{key}.unit"),
                    "give either unit or per, not both",
                );
                None
            }
            (Some(unit), None) => match Unit::from_name(&unit.value) {
                Some(u) => Some((u.duration(), Some(u))),
                None => {
                    self.error(
                        unit,
                        &format!("{key}.unit"),
                        format!(
                            "invalid rate limit unit '{}' (second, minute, hour, day, week, \
                             month or year)",
                            unit.value
                        ),
                    );
                    None
                }
            },
            (None, Some(per)) => match unit::parse_period(&per.value) {
                Some(period) => Some((period, None)),
                None => {
                    self.error(
                        per,
                        &format!("{key}.per"),
                        format!(
                            "invalid period '{}' (a whole number and ms, s, m, h or d, such as 30s)",
                            per.value
                        ),
                    );
                    None
                }
            },
            (None, None) => {
                self.error(
                    spanned,
                    key,
                    "invalid rate limit unit '' (give unit, per, or unlimited: true)",
                );
                None
            }
        };
        let (period, unit) = period?;
        if self.errors.len() != before {
            return None;
        }
        self.bucket(spanned, key, requests, period, unit)
    }

    /// The bucket limit of `requests` per `period` (the unit's, if the file named one).
    fn bucket(
        &mut self,
        spanned: &Spanned<RateLimitYaml>,
        key: &str,
        requests: u32,
        period: Duration,
        unit: Option<Unit>,
    ) -> Option<Limit> {
        let r = &spanned.value;
        let reported = match unit {
            Some(unit) => Reported {
                requests_per_unit: requests,
                unit,
            },
            None => match unit::report_in_unit(requests, period) {
                Some((requests_per_unit, unit)) => Reported {
                    requests_per_unit,
                    unit,
                },
                None => {
                    let per = r.per.as_ref().expect("a period without unit came from per");
                    self.error(
                        per,
                        &format!("{key}.per"),
                        format!(
                            "no unit (second to year) holds a whole number of periods of '{}' \
                             with requests_per_unit {requests} scaled to fit 32 bits, which \
                             current_limit must report",
                            per.value
                        ),
                    );
                    return None;
                }
            },
        };
        if requests == 0 {
            if let Some(burst) = &r.burst {
                self.error(
                    burst,
                    &format!("{key}.burst"),
                    "burst needs requests_per_unit of at least 1",
                );
                return None;
            }
            return Some(Limit::Blocked { reported });
        }
        let burst = match &r.burst {
            Some(b) if b.value == 0 => {
                self.error(b, &format!("{key}.burst"), "burst must be at least 1");
                return None;
            }
            Some(b) => b.value,
            None => requests,
        };
        let period_ns = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
        // Rounded up, as Quota::per_second rounds: the long-run rate never exceeds the one
        // configured.
        let interval = Duration::from_nanos(period_ns.div_ceil(u64::from(requests)));
        match Quota::try_new(interval, burst) {
            Ok(quota) => Some(Limit::Bucket { quota, reported }),
            Err(e) => {
                self.error(spanned, key, format!("the limit cannot be held: {e}"));
                None
            }
        }
    }
}
