//! The checks of a request before anything is decided: whatever a client sends, a request
//! that is malformed or beyond the limits is answered INVALID_ARGUMENT with the reason, and
//! spends nothing.

use crate::config::Unit;
use envoy_types::pb::envoy::service::ratelimit::v3::RateLimitRequest;

/// The bounds a request must keep (from the settings).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    pub max_descriptors: usize,
    pub max_entries: usize,
    pub max_string_bytes: usize,
}

impl Bounds {
    /// The bounds `settings` set.
    pub fn of(settings: &crate::settings::Settings) -> Bounds {
        Bounds {
            max_descriptors: settings.max_descriptors,
            max_entries: settings.max_entries,
            max_string_bytes: settings.max_string_bytes,
        }
    }
}

/// A checked descriptor: its entries, override and cost.
pub(crate) struct Checked {
    pub entries: Vec<(String, String)>,
    pub limit: Option<(u32, Unit)>,
    pub cost: u32,
}

/// Checks `request`, taking its descriptors; the reason it is refused otherwise.
pub(crate) fn check(
    request: &mut RateLimitRequest,
    bounds: Bounds,
) -> Result<Vec<Checked>, String> {
    if request.domain.is_empty() {
        return Err("domain must not be empty".to_owned());
    }
    if request.domain.len() > bounds.max_string_bytes {
        return Err(format!(
            "domain is {} bytes, more than the {} allowed",
            request.domain.len(),
            bounds.max_string_bytes
        ));
    }
    if request.descriptors.is_empty() {
        return Err("a request needs at least one descriptor".to_owned());
    }
    if request.descriptors.len() > bounds.max_descriptors {
        return Err(format!(
            "{} descriptors, more than the {} allowed",
            request.descriptors.len(),
            bounds.max_descriptors
        ));
    }
    // 0 means 1 (the protos' default).
    let request_cost = request.hits_addend.max(1);
    let mut checked = Vec::with_capacity(request.descriptors.len());
    for (i, d) in request.descriptors.iter_mut().enumerate() {
        if d.entries.is_empty() {
            return Err(format!("descriptors[{i}] has no entries"));
        }
        if d.entries.len() > bounds.max_entries {
            return Err(format!(
                "descriptors[{i}] has {} entries, more than the {} allowed",
                d.entries.len(),
                bounds.max_entries
            ));
        }
        if d.is_negative_hits {
            return Err(format!(
                "descriptors[{i}]: is_negative_hits (a give-back of tokens) is not accepted by \
                 this server"
            ));
        }
        let mut entries = Vec::with_capacity(d.entries.len());
        for (j, entry) in d.entries.iter_mut().enumerate() {
            if entry.key.is_empty() {
                return Err(format!("descriptors[{i}].entries[{j}] has an empty key"));
            }
            let longest = entry.key.len().max(entry.value.len());
            if longest > bounds.max_string_bytes {
                return Err(format!(
                    "descriptors[{i}].entries[{j}]: a key or value of {longest} bytes, more than \
                     the {} allowed",
                    bounds.max_string_bytes
                ));
            }
            entries.push((
                std::mem::take(&mut entry.key),
                std::mem::take(&mut entry.value),
            ));
        }
        let limit = match &d.limit {
            None => None,
            Some(limit) => match Unit::from_proto(limit.unit) {
                Some(unit) => Some((limit.requests_per_unit, unit)),
                None => {
                    return Err(format!(
                        "descriptors[{i}].limit has an unknown unit ({})",
                        limit.unit
                    ))
                }
            },
        };
        let cost = match d.hits_addend {
            None => request_cost,
            Some(n) => u32::try_from(n.value).map_err(|_| {
                format!(
                    "descriptors[{i}].hits_addend {} is more than 2^32 - 1",
                    n.value
                )
            })?,
        };
        checked.push(Checked {
            entries,
            limit,
            cost,
        });
    }
    Ok(checked)
}
