//! The header fields: `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-10,
//! RFC 9651 Structured Field lists), the legacy `X-RateLimit-*` and `Retry-After`.

use super::state::{quota_window, PolicyState, MAX_POLICIES};
use crate::Quota;
use http::header::{HeaderName, HeaderValue};
use std::fmt::Write;

/// `RateLimit-Policy`.
pub(crate) static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`.
pub(crate) static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
static X_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
static X_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
static X_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// A policy as the headers name it.
#[derive(Clone, Debug)]
pub struct PolicyInfo {
    /// The policy name, checked to be a valid Structured Field string.
    pub(crate) name: String,
    /// The quota, for `q` and `w` (the one configured; a per-request quota overrides it).
    pub(crate) quota: Quota,
}

impl PolicyInfo {
    pub(crate) fn new(name: &str, quota: Quota) -> PolicyInfo {
        PolicyInfo {
            name: name.to_owned(),
            quota,
        }
    }
}

/// Checks that `name` can be written as a Structured Field string (printable ASCII).
///
/// # Panics
/// If it cannot; `what` names the call in the message.
pub(crate) fn checked_name(name: impl Into<String>, what: &str) -> String {
    let name = name.into();
    assert!(
        !name.is_empty() && name.bytes().all(|b| (0x20..=0x7e).contains(&b)),
        "{what}: the policy name {name:?} must be 1 or more printable ASCII characters"
    );
    name
}

/// The headers an answer carries, formatted once at decision time.
#[derive(Clone, Debug, Default)]
pub(crate) struct Fields {
    pub(crate) pairs: Vec<(HeaderName, HeaderValue)>,
}

/// Which fields to write.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FieldChoice {
    pub(crate) ietf: bool,
    pub(crate) legacy: bool,
}

impl Fields {
    /// The fields for `states` (one per policy; `None` for a policy that did not apply).
    /// `quotas` overrides a policy's configured quota (a per-request tier).
    pub(crate) fn new(
        choice: FieldChoice,
        policies: &[PolicyInfo],
        static_policy: &HeaderValue,
        states: &[Option<PolicyState>; MAX_POLICIES],
        quotas: &[Option<Quota>; MAX_POLICIES],
    ) -> Fields {
        if !choice.ietf && !choice.legacy {
            return Fields::default(); // no allocation
        }
        let mut pairs = Vec::with_capacity(5);
        if choice.ietf {
            let policy_value = if quotas.iter().any(Option::is_some) {
                policy_field(policies, quotas)
            } else {
                static_policy.clone()
            };
            pairs.push((RATELIMIT_POLICY.clone(), policy_value));
            if let Some(value) = ratelimit_field(policies, states) {
                pairs.push((RATELIMIT.clone(), value));
            }
        }
        if choice.legacy {
            // One policy only: the one with the fewest tokens left (the first among equals).
            let tightest = states
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.map(|s| (i, s)))
                .min_by_key(|(_, s)| s.remaining);
            if let Some((i, state)) = tightest {
                let quota = quotas[i].unwrap_or(policies[i].quota);
                pairs.push((X_LIMIT.clone(), HeaderValue::from(quota.burst())));
                pairs.push((X_REMAINING.clone(), HeaderValue::from(state.remaining)));
                pairs.push((X_RESET.clone(), HeaderValue::from(state.full_secs)));
            }
        }
        Fields { pairs }
    }
}

/// `RateLimit-Policy`: `"name";q=<burst>;w=<fill seconds>` per policy.
pub(crate) fn policy_field(
    policies: &[PolicyInfo],
    quotas: &[Option<Quota>; MAX_POLICIES],
) -> HeaderValue {
    let mut out = String::with_capacity(32 * policies.len());
    for (i, policy) in policies.iter().enumerate() {
        let (q, w) = quota_window(&quotas[i].unwrap_or(policy.quota));
        item(&mut out, &policy.name);
        let _ = write!(out, ";q={q};w={w}");
    }
    header_value(out)
}

/// `RateLimit`: `"name";r=<remaining>;t=<seconds>` per policy that applied, `pk` if known.
fn ratelimit_field(
    policies: &[PolicyInfo],
    states: &[Option<PolicyState>; MAX_POLICIES],
) -> Option<HeaderValue> {
    let mut out = String::with_capacity(40 * policies.len());
    for (policy, state) in policies.iter().zip(states) {
        let Some(state) = state else { continue };
        item(&mut out, &policy.name);
        let _ = write!(out, ";r={};t={}", state.remaining, state.next_token_secs);
        if let Some(partition) = state.partition {
            out.push_str(";pk=:");
            base64(&partition.to_be_bytes(), &mut out);
            out.push(':');
        }
    }
    (!out.is_empty()).then(|| header_value(out))
}

/// Starts a list member: the separator, then the name as an sf-string.
fn item(out: &mut String, name: &str) {
    if !out.is_empty() {
        out.push_str(", ");
    }
    push_quoted(out, name);
}

/// `name` (printable ASCII, checked) in double quotes with `"` and `\` escaped: an RFC 9651
/// string, and a JSON string too.
pub(crate) fn push_quoted(out: &mut String, name: &str) {
    out.push('"');
    for c in name.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

fn header_value(text: String) -> HeaderValue {
    // Printable ASCII only: names are checked, the rest is digits and punctuation.
    HeaderValue::try_from(text).expect("a structured field is a valid header value")
}

/// Standard base64 with padding, as RFC 9651 byte sequences use.
fn base64(bytes: &[u8], out: &mut String) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * k)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (input, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("foobar", "Zm9vYmFy"),
        ] {
            let mut out = String::new();
            base64(input.as_bytes(), &mut out);
            assert_eq!(out, want);
        }
    }

    #[test]
    fn names_are_escaped_sf_strings() {
        let mut out = String::new();
        item(&mut out, r#"a"b\c"#);
        item(&mut out, "x");
        assert_eq!(out, r#""a\"b\\c", "x""#);
    }
}
