//! The names a descriptor's entries give: its bucket's key within a rule, its key under a
//! per-call override, and its `detailed_metric` label.

use crate::config::Matched;
use std::fmt::Write;

/// The key of a rule's bucket: the values of the entries that tell its buckets apart, each
/// preceded by its length (so that no two lists of values make one key).
pub(crate) fn bucket_key(entries: &[(String, String)], matched: &[Matched]) -> String {
    let mut key = String::new();
    for ((_, value), how) in entries.iter().zip(matched) {
        if *how == Matched::PerValue {
            // Writing to a String cannot fail.
            let _ = write!(key, "{}:", value.len());
            key.push_str(value);
        }
    }
    key
}

/// A descriptor's entries as a `detailed_metric` label: `key_value` joined by dots, as the
/// reference server names its detailed stats.
pub(crate) fn metric_value(entries: &[(String, String)]) -> String {
    let parts: Vec<String> = entries.iter().map(|(k, v)| format!("{k}_{v}")).collect();
    parts.join(".")
}

/// A descriptor's entries as one key: each entry's key and value, length-prefixed.
pub(crate) fn full_key(entries: &[(String, String)]) -> String {
    let mut key = String::new();
    for (k, v) in entries {
        for part in [k, v] {
            let _ = write!(key, "{}:", part.len());
            key.push_str(part);
        }
    }
    key
}
