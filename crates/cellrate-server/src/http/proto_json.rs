//! `RateLimitRequest` and `RateLimitResponse` in the proto3 JSON mapping, as the reference
//! server's `/json` endpoint reads and writes them (Go's `protojson`): field names in
//! lowerCamelCase (the proto names accepted too), enums by name (or number when read),
//! 64-bit integers as strings (numbers accepted when read), durations as `"1.5s"`, fields at
//! their default left out, unknown fields refused, `null` read as the default.

use envoy_types::pb::envoy::config::core::v3::HeaderValue;
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::rate_limit_descriptor::{
    Entry, RateLimitOverride,
};
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
use envoy_types::pb::envoy::r#type::v3::RateLimitUnit;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::rate_limit::Unit;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::{Code, DescriptorStatus};
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use envoy_types::pb::google::protobuf::{Duration as ProtoDuration, UInt64Value};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

/// A `RateLimitRequest` as JSON.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Request {
    #[serde(default)]
    domain: Option<String>,
    #[serde(default)]
    descriptors: Option<Vec<Descriptor>>,
    #[serde(
        default,
        rename = "hitsAddend",
        alias = "hits_addend",
        deserialize_with = "uint"
    )]
    hits_addend: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Descriptor {
    #[serde(default)]
    entries: Option<Vec<JsonEntry>>,
    #[serde(default)]
    limit: Option<Override>,
    #[serde(
        default,
        rename = "hitsAddend",
        alias = "hits_addend",
        deserialize_with = "uint"
    )]
    hits_addend: Option<u64>,
    #[serde(default, rename = "isNegativeHits", alias = "is_negative_hits")]
    is_negative_hits: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonEntry {
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    value: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Override {
    #[serde(
        default,
        rename = "requestsPerUnit",
        alias = "requests_per_unit",
        deserialize_with = "uint"
    )]
    requests_per_unit: Option<u64>,
    #[serde(default, deserialize_with = "unit")]
    unit: Option<i32>,
}

/// An unsigned integer: a JSON number, or a string of digits (how proto3 JSON writes 64-bit
/// ones); `null` is unset.
fn uint<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        Number(u64),
        Text(String),
    }
    match Option::<Form>::deserialize(d)? {
        None => Ok(None),
        Some(Form::Number(n)) => Ok(Some(n)),
        Some(Form::Text(t)) => t
            .parse()
            .map(Some)
            .map_err(|_| de::Error::custom(format!("{t:?} is not an unsigned integer"))),
    }
}

/// A `RateLimitUnit`: its name (`"SECOND"`) or its number.
fn unit<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        Number(i32),
        Name(String),
    }
    match Option::<Form>::deserialize(d)? {
        None => Ok(None),
        Some(Form::Number(n)) => Ok(Some(n)),
        Some(Form::Name(name)) => RateLimitUnit::from_str_name(&name)
            .map(|u| Some(u as i32))
            .ok_or_else(|| de::Error::custom(format!("{name:?} is not a RateLimitUnit"))),
    }
}

impl Request {
    /// The protobuf message; `Err` for a figure out of its field's range.
    pub fn into_proto(self) -> Result<RateLimitRequest, String> {
        let u32_of = |n: Option<u64>, field: &str| {
            u32::try_from(n.unwrap_or(0)).map_err(|_| format!("{field} is more than 2^32 - 1"))
        };
        let mut descriptors = Vec::new();
        for (i, d) in self.descriptors.unwrap_or_default().into_iter().enumerate() {
            let limit = match d.limit {
                Some(o) => Some(RateLimitOverride {
                    requests_per_unit: u32_of(
                        o.requests_per_unit,
                        &format!("descriptors[{i}].limit.requestsPerUnit"),
                    )?,
                    unit: o.unit.unwrap_or(0),
                }),
                None => None,
            };
            descriptors.push(RateLimitDescriptor {
                entries: d
                    .entries
                    .unwrap_or_default()
                    .into_iter()
                    .map(|e| Entry {
                        key: e.key.unwrap_or_default(),
                        value: e.value.unwrap_or_default(),
                    })
                    .collect(),
                limit,
                hits_addend: d.hits_addend.map(|value| UInt64Value { value }),
                is_negative_hits: d.is_negative_hits.unwrap_or(false),
            });
        }
        Ok(RateLimitRequest {
            domain: self.domain.unwrap_or_default(),
            descriptors,
            hits_addend: u32_of(self.hits_addend, "hitsAddend")?,
        })
    }
}

/// A `RateLimitResponse` as JSON, in field number order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Response {
    overall_code: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    statuses: Vec<Status>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    response_headers_to_add: Vec<Header>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    code: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    current_limit: Option<Limit>,
    #[serde(skip_serializing_if = "is_zero")]
    limit_remaining: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_until_reset: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Limit {
    #[serde(skip_serializing_if = "is_zero")]
    requests_per_unit: u32,
    unit: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
}

#[derive(Serialize)]
struct Header {
    key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    value: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn code(n: i32) -> &'static str {
    Code::try_from(n).unwrap_or(Code::Unknown).as_str_name()
}

/// A duration as proto3 JSON writes it: seconds with 0, 3, 6 or 9 decimals and an `s`.
fn duration(d: &ProtoDuration) -> String {
    let (secs, nanos) = (d.seconds, d.nanos.unsigned_abs());
    match nanos {
        0 => format!("{secs}s"),
        n if n % 1_000_000 == 0 => format!("{secs}.{:03}s", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{secs}.{:06}s", n / 1_000),
        n => format!("{secs}.{n:09}s"),
    }
}

impl Response {
    /// The JSON form of `response`.
    pub fn of(response: &RateLimitResponse) -> Response {
        let status = |s: &DescriptorStatus| Status {
            code: code(s.code),
            current_limit: s.current_limit.as_ref().map(|l| Limit {
                requests_per_unit: l.requests_per_unit,
                unit: Unit::try_from(l.unit)
                    .unwrap_or(Unit::Unknown)
                    .as_str_name(),
                name: l.name.clone(),
            }),
            limit_remaining: s.limit_remaining,
            duration_until_reset: s.duration_until_reset.as_ref().map(duration),
        };
        Response {
            overall_code: code(response.overall_code),
            statuses: response.statuses.iter().map(status).collect(),
            response_headers_to_add: response
                .response_headers_to_add
                .iter()
                .map(|h: &HeaderValue| Header {
                    key: h.key.clone(),
                    value: h.value.clone(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let d = |seconds, nanos| duration(&ProtoDuration { seconds, nanos });
        assert_eq!(d(1, 0), "1s");
        assert_eq!(d(1, 500_000_000), "1.500s");
        assert_eq!(d(0, 1_000), "0.000001s");
        assert_eq!(d(0, 1), "0.000000001s");
    }

    #[test]
    fn both_field_name_forms_and_string_integers() {
        let text = r#"{"domain":"d","hits_addend":"3","descriptors":[{"entries":[{"key":"k","value":null}],
            "limit":{"requestsPerUnit":5,"unit":"MINUTE"},"hitsAddend":"7"}]}"#;
        let req: Request = serde_json::from_str(text).unwrap();
        let req = req.into_proto().unwrap();
        assert_eq!((req.domain.as_str(), req.hits_addend), ("d", 3));
        let d = &req.descriptors[0];
        assert_eq!(d.entries[0].value, "");
        assert_eq!(d.hits_addend.as_ref().map(|h| h.value), Some(7));
        let limit = d.limit.as_ref().unwrap();
        assert_eq!(
            (limit.requests_per_unit, limit.unit),
            (5, RateLimitUnit::Minute as i32)
        );
        assert!(serde_json::from_str::<Request>(r#"{"domian":"d"}"#).is_err());
    }
}
