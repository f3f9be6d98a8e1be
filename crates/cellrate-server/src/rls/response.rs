//! The answer in the protos' terms, with the optional rate limit headers.

use crate::decide::{whole_seconds_up, Status};
use crate::settings::Headers;
use envoy_types::pb::envoy::config::core::v3::HeaderValue;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::{
    Code, DescriptorStatus, RateLimit,
};
use envoy_types::pb::envoy::service::ratelimit::v3::RateLimitResponse;
use envoy_types::pb::google::protobuf::Duration as ProtoDuration;
use std::time::Duration;

/// The response for the decision `admitted` with `statuses`.
pub(crate) fn response(admitted: bool, statuses: &[Status], headers: Headers) -> RateLimitResponse {
    let code = |over: bool| if over { Code::OverLimit } else { Code::Ok } as i32;
    RateLimitResponse {
        overall_code: code(!admitted),
        statuses: statuses
            .iter()
            .map(|s| DescriptorStatus {
                code: code(s.over_limit),
                current_limit: s.limit.as_ref().map(|(reported, name)| RateLimit {
                    name: name.clone(),
                    requests_per_unit: reported.requests_per_unit,
                    unit: reported.unit.proto() as i32,
                }),
                limit_remaining: s.remaining,
                duration_until_reset: s.until_reset.map(proto_duration),
                ..Default::default()
            })
            .collect(),
        response_headers_to_add: header_fields(statuses, headers),
        ..Default::default()
    }
}

fn proto_duration(d: Duration) -> ProtoDuration {
    ProtoDuration {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
    }
}

/// The header fields of `statuses` in the chosen form, from the statuses with a limit: the
/// IETF `RateLimit-Policy` and `RateLimit` (one item per limit), or the reference server's
/// `RateLimit-Limit`/`-Remaining`/`-Reset` of the most restrictive limit.
fn header_fields(statuses: &[Status], headers: Headers) -> Vec<HeaderValue> {
    let limited: Vec<&Status> = statuses.iter().filter(|s| s.limit.is_some()).collect();
    if headers == Headers::Off || limited.is_empty() {
        return Vec::new();
    }
    let seconds = |s: &Status| whole_seconds_up(s.until_reset.unwrap_or_default()).as_secs();
    let field = |key: &str, value: String| HeaderValue {
        key: key.to_owned(),
        value,
        ..Default::default()
    };
    match headers {
        Headers::Off => Vec::new(),
        Headers::Ietf => {
            let mut policy = Vec::new();
            let mut state = Vec::new();
            for (i, s) in limited.iter().enumerate() {
                let (reported, name) = s.limit.as_ref().expect("filtered on a limit");
                let name = sf_string(name, i);
                policy.push(format!(
                    "{name};q={};w={}",
                    reported.requests_per_unit,
                    reported.unit.seconds()
                ));
                state.push(format!("{name};r={};t={}", s.remaining, seconds(s)));
            }
            vec![
                field("RateLimit-Policy", policy.join(", ")),
                field("RateLimit", state.join(", ")),
            ]
        }
        Headers::Draft => {
            let tightest = limited
                .iter()
                .min_by_key(|s| (s.remaining, std::cmp::Reverse(seconds(s))))
                .expect("not empty");
            let (reported, _) = tightest.limit.as_ref().expect("filtered on a limit");
            let window = reported.unit.seconds();
            vec![
                field(
                    "RateLimit-Limit",
                    format!(
                        "{}, {};w={window}",
                        reported.requests_per_unit, reported.requests_per_unit
                    ),
                ),
                field("RateLimit-Remaining", tightest.remaining.to_string()),
                field("RateLimit-Reset", seconds(tightest).to_string()),
            ]
        }
    }
}

/// A policy name as a Structured Field string: the rule's name when it is printable ASCII,
/// else `limit<i>`.
fn sf_string(name: &str, i: usize) -> String {
    let printable = !name.is_empty() && name.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let name = if printable {
        name.to_owned()
    } else {
        format!("limit{i}")
    };
    format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""))
}
