//! The header fields: `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-10,
//! RFC 9651 Structured Field lists), the legacy `X-RateLimit-*` and `Retry-After`.

use super::state::{quota_window, PolicyState, MAX_POLICIES};
use bytes::Bytes;
use cellrate::Quota;
use http::header::{HeaderMap, HeaderName, HeaderValue};

/// A policy as the headers name it.
#[derive(Clone, Debug)]
pub struct PolicyInfo {
    /// The policy name, checked to be a valid Structured Field string.
    pub(crate) name: String,
    /// The name as an sf-string (quoted, escaped), written once here rather than per response.
    quoted: String,
    /// The quota, for `q` and `w` (the one configured; a per-request quota overrides it).
    pub(crate) quota: Quota,
}

impl PolicyInfo {
    pub(crate) fn new(name: &str, quota: Quota) -> PolicyInfo {
        let mut quoted = String::with_capacity(name.len() + 2);
        push_quoted(&mut quoted, name);
        PolicyInfo {
            name: name.to_owned(),
            quoted,
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

/// The headers an answer carries, formatted at decision time: at most two values and three
/// numbers, inline, so an answer without headers costs nothing and one with them allocates
/// only the bytes of its `RateLimit` value. The values are held as their bytes, made into
/// header values when written: a `HeaderValue` is five words, and these fields ride in the
/// response future of every admitted request, headers or not, which is moved several times.
#[derive(Clone, Debug, Default)]
pub(crate) struct Fields {
    policy: Option<PolicyValue>,
    ratelimit: Option<Box<[u8]>>,
    /// `X-RateLimit-Limit`, `-Remaining` and `-Reset`.
    legacy: Option<[u32; 3]>,
}

/// A `RateLimit-Policy` value: the layer's, or one written for a request whose quotas are not
/// the configured ones.
#[derive(Clone, Debug)]
enum PolicyValue {
    Configured(&'static HeaderValue),
    Written(Box<[u8]>),
}

/// Which fields to write.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FieldChoice {
    pub(crate) ietf: bool,
    pub(crate) legacy: bool,
}

impl Fields {
    /// The fields for `states` (one per policy; `None` for a policy that did not apply).
    /// `quotas` overrides the quota a policy was described with (a per-request tier, or a
    /// quota changed while running).
    #[inline]
    pub(crate) fn new(
        choice: FieldChoice,
        policies: &[PolicyInfo],
        static_policy: Option<&'static HeaderValue>,
        states: &[Option<PolicyState>; MAX_POLICIES],
        quotas: &[Option<Quota>; MAX_POLICIES],
    ) -> Fields {
        if !choice.ietf && !choice.legacy {
            return Fields::default();
        }
        Fields::written(choice, policies, static_policy, states, quotas)
    }

    /// [`Fields::new`] when some field is asked for.
    fn written(
        choice: FieldChoice,
        policies: &[PolicyInfo],
        static_policy: Option<&'static HeaderValue>,
        states: &[Option<PolicyState>; MAX_POLICIES],
        quotas: &[Option<Quota>; MAX_POLICIES],
    ) -> Fields {
        let mut fields = Fields::default();
        if choice.ietf {
            fields.policy = Some(match static_policy {
                Some(value) if quotas.iter().all(Option::is_none) => PolicyValue::Configured(value),
                _ => PolicyValue::Written(policy_bytes(policies, quotas).boxed()),
            });
            fields.ratelimit = ratelimit_field(policies, states);
        }
        if choice.legacy {
            // One policy only: the one with the fewest tokens left (the first among equals).
            let tightest = states
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.map(|s| (i, s)))
                .min_by_key(|(_, s)| s.remaining);
            fields.legacy = tightest.map(|(i, state)| {
                let quota = quotas[i].unwrap_or(policies[i].quota);
                [quota.burst(), state.remaining, state.full_secs]
            });
        }
        fields
    }

    /// Appends the fields to an admitted response's headers: a `RateLimit` list split over
    /// lines is one list (RFC 9651), so nested layers add up.
    #[inline]
    pub(crate) fn append_to(self, headers: &mut HeaderMap) {
        self.write(headers, |headers, name, value| {
            headers.append(name, value);
        });
    }

    /// Adds the fields a refusal does not already have (a custom refusal may set its own).
    pub(crate) fn insert_missing(self, headers: &mut HeaderMap) {
        self.write(headers, |headers, name, value| {
            if !headers.contains_key(&name) {
                headers.insert(name, value);
            }
        });
    }

    // The names are built at compile time (`const`) and moved in: no clone per response.
    #[inline]
    fn write(
        self,
        headers: &mut HeaderMap,
        mut put: impl FnMut(&mut HeaderMap, HeaderName, HeaderValue),
    ) {
        if let Some(policy) = self.policy {
            let value = match policy {
                PolicyValue::Configured(value) => value.clone(),
                PolicyValue::Written(bytes) => header_value(bytes),
            };
            put(
                headers,
                const { HeaderName::from_static("ratelimit-policy") },
                value,
            );
        }
        if let Some(bytes) = self.ratelimit {
            put(
                headers,
                const { HeaderName::from_static("ratelimit") },
                header_value(bytes),
            );
        }
        if let Some([limit, remaining, reset]) = self.legacy {
            let x_limit = const { HeaderName::from_static("x-ratelimit-limit") };
            let x_remaining = const { HeaderName::from_static("x-ratelimit-remaining") };
            let x_reset = const { HeaderName::from_static("x-ratelimit-reset") };
            put(headers, x_limit, HeaderValue::from(limit));
            put(headers, x_remaining, HeaderValue::from(remaining));
            put(headers, x_reset, HeaderValue::from(reset));
        }
    }
}

/// `bytes` (written by [`ValueBuf`]: visible ASCII) as a header value, sharing their
/// allocation.
fn header_value(bytes: Box<[u8]>) -> HeaderValue {
    // `http` checks the bytes again (a pass over a few dozen bytes): `ValueBuf` writes only
    // visible ASCII, so the check cannot fail.
    HeaderValue::from_maybe_shared(Bytes::from(bytes)).expect("a header value of visible ASCII")
}

/// `RateLimit-Policy`: `"name";q=<burst>;w=<fill seconds>` per policy.
pub(crate) fn policy_field(
    policies: &[PolicyInfo],
    quotas: &[Option<Quota>; MAX_POLICIES],
) -> HeaderValue {
    header_value(policy_bytes(policies, quotas).boxed())
}

/// The bytes of [`policy_field`].
fn policy_bytes(policies: &[PolicyInfo], quotas: &[Option<Quota>; MAX_POLICIES]) -> ValueBuf {
    let mut out = ValueBuf::new();
    for (i, policy) in policies.iter().enumerate() {
        let (q, w) = quota_window(&quotas[i].unwrap_or(policy.quota));
        out.item(policy);
        out.number(b";q=", q);
        out.number(b";w=", w);
    }
    out
}

/// `RateLimit`: `"name";r=<remaining>;t=<seconds>` per policy that applied, `pk` if known.
fn ratelimit_field(
    policies: &[PolicyInfo],
    states: &[Option<PolicyState>; MAX_POLICIES],
) -> Option<Box<[u8]>> {
    let mut out = ValueBuf::new();
    for (policy, state) in policies.iter().zip(states) {
        let Some(state) = state else { continue };
        out.item(policy);
        out.number(b";r=", state.remaining);
        out.number(b";t=", state.next_token_secs);
        if let Some(partition) = state.partition {
            out.push(b";pk=:");
            base64(&partition.to_be_bytes(), |b| out.push(&[b]));
            out.push(b":");
        }
    }
    (!out.as_bytes().is_empty()).then(|| out.boxed())
}

/// A header value being written: on the stack while it fits (any realistic value), on the
/// heap past that, so the only allocation is the value's own bytes. Only visible ASCII is ever
/// pushed: policy names are checked when the layer is built, the rest is digits, base64 and
/// punctuation.
struct ValueBuf {
    stack: [u8; 128],
    len: usize,
    heap: Vec<u8>,
}

impl ValueBuf {
    #[inline]
    fn new() -> ValueBuf {
        ValueBuf {
            stack: [0; 128],
            len: 0,
            heap: Vec::new(),
        }
    }

    #[inline]
    fn push(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if self.heap.is_empty() && end <= self.stack.len() {
            // Byte by byte: the pieces are a few bytes long, shorter than a call to memcpy.
            for (to, &from) in self.stack[self.len..end].iter_mut().zip(bytes) {
                *to = from;
            }
            self.len = end;
        } else {
            if self.heap.is_empty() {
                self.heap.extend_from_slice(&self.stack[..self.len]);
            }
            self.heap.extend_from_slice(bytes);
        }
    }

    /// `label` then `n` in decimal.
    #[inline]
    fn number(&mut self, label: &[u8], n: impl itoa::Integer) {
        self.push(label);
        self.push(itoa::Buffer::new().format(n).as_bytes());
    }

    /// Starts a list member: the separator, then the policy's name as an sf-string.
    #[inline]
    fn item(&mut self, policy: &PolicyInfo) {
        if !self.as_bytes().is_empty() {
            self.push(b", ");
        }
        self.push(policy.quoted.as_bytes());
    }

    #[inline]
    fn as_bytes(&self) -> &[u8] {
        if self.heap.is_empty() {
            &self.stack[..self.len]
        } else {
            &self.heap
        }
    }

    /// The bytes written, in an allocation of their own. By reference: moved, the buffer
    /// (its stack part is 128 bytes) is copied.
    fn boxed(&self) -> Box<[u8]> {
        Box::from(self.as_bytes())
    }
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

/// Standard base64 with padding, as RFC 9651 byte sequences use.
fn base64(bytes: &[u8], mut out: impl FnMut(u8)) {
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
                out(ALPHABET[(n >> (18 - 6 * k)) as usize & 63]);
            } else {
                out(b'=');
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
            base64(input.as_bytes(), |b| out.push(char::from(b)));
            assert_eq!(out, want);
        }
    }

    #[test]
    fn names_are_escaped_sf_strings() {
        let mut out = ValueBuf::new();
        out.item(&PolicyInfo::new(r#"a"b\c"#, Quota::per_second(1)));
        out.item(&PolicyInfo::new("x", Quota::per_second(1)));
        assert_eq!(out.as_bytes(), br#""a\"b\\c", "x""#);
    }

    #[test]
    fn a_value_longer_than_the_stack_buffer_is_whole() {
        let long = "n".repeat(150);
        let policies = [
            PolicyInfo::new(&long, Quota::per_second(10)),
            PolicyInfo::new("global", Quota::per_second(1_000)),
        ];
        let state = |remaining| {
            Some(PolicyState {
                remaining,
                next_token_secs: 1,
                full_secs: 1,
                partition: None,
            })
        };
        let value = ratelimit_field(&policies, &[state(7), state(996), None, None]);
        let want = format!("\"{long}\";r=7;t=1, \"global\";r=996;t=1");
        assert_eq!(header_value(value.unwrap()).to_str().unwrap(), want);
        let policy = policy_field(&policies, &[None; MAX_POLICIES]);
        let want = format!("\"{long}\";q=10;w=1, \"global\";q=1000;w=1");
        assert_eq!(policy.to_str().unwrap(), want);
    }
}
