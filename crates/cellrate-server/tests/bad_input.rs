//! Hostile requests: each answered with a clear status, nothing spent, the server unharmed.

use crate::decisions::SHOP;
use crate::support::{descriptor, overridden, request, Running};
use envoy_types::pb::envoy::service::ratelimit::v3::RateLimitRequest;
use envoy_types::pb::google::protobuf::UInt64Value;
use tonic::Code;

async fn refused(s: &mut Running, req: RateLimitRequest, code: Code, message: &str) {
    let status = s.call(req).await.unwrap_err();
    assert_eq!(status.code(), code, "{status:?}");
    assert!(
        status.message().contains(message),
        "{:?} lacks {message:?}",
        status.message()
    );
}

#[tokio::test]
async fn bad_requests_are_refused_and_spend_nothing() {
    let mut s = Running::start(&[("shop.yaml", SHOP)], |_| {}).await;
    let user = || descriptor(&[("user", "u")]);
    let invalid = Code::InvalidArgument;
    refused(
        &mut s,
        request("", vec![user()], 0),
        invalid,
        "domain must not be empty",
    )
    .await;
    refused(
        &mut s,
        request("shop", vec![], 0),
        invalid,
        "at least one descriptor",
    )
    .await;
    let many: Vec<_> = (0..5_000).map(|_| user()).collect();
    refused(
        &mut s,
        request("shop", many, 0),
        invalid,
        "5000 descriptors, more than the 64",
    )
    .await;
    let entries: Vec<(String, String)> = (0..2_000)
        .map(|i| (format!("k{i}"), "v".to_owned()))
        .collect();
    let entries: Vec<(&str, &str)> = entries
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    refused(
        &mut s,
        request("shop", vec![descriptor(&entries)], 0),
        invalid,
        "2000 entries",
    )
    .await;
    refused(
        &mut s,
        request("shop", vec![descriptor(&[])], 0),
        invalid,
        "has no entries",
    )
    .await;
    refused(
        &mut s,
        request("shop", vec![descriptor(&[("", "v")])], 0),
        invalid,
        "empty key",
    )
    .await;
    let long = "x".repeat(5_000);
    refused(
        &mut s,
        request("shop", vec![descriptor(&[("user", &long)])], 0),
        invalid,
        "5000 bytes",
    )
    .await;
    refused(
        &mut s,
        request(&long, vec![user()], 0),
        invalid,
        "domain is 5000 bytes",
    )
    .await;
    let mut negative = user();
    negative.is_negative_hits = true;
    refused(
        &mut s,
        request("shop", vec![negative], 0),
        invalid,
        "is_negative_hits",
    )
    .await;
    let mut huge = user();
    huge.hits_addend = Some(UInt64Value { value: 1 << 40 });
    refused(
        &mut s,
        request("shop", vec![huge], 0),
        invalid,
        "hits_addend 1099511627776",
    )
    .await;
    refused(
        &mut s,
        request("shop", vec![overridden(&[("user", "u")], 5, 99)], 0),
        invalid,
        "unknown unit (99)",
    )
    .await;
    refused(
        &mut s,
        request("shop", vec![overridden(&[("user", "u")], 5, 0)], 0),
        invalid,
        "unknown unit (0)",
    )
    .await;
    // A message beyond --max-message-bytes is refused by the gRPC layer before it is read.
    let megabyte = "y".repeat(1 << 20);
    let status = s
        .call(request("shop", vec![descriptor(&[("user", &megabyte)])], 0))
        .await
        .unwrap_err();
    assert_ne!(status.code(), Code::Ok);
    // A cost above the burst can never pass: refused, not an error.
    let answer = s.call(request("shop", vec![user()], 5)).await.unwrap();
    assert_eq!(answer.overall_code, 2);
    // Nothing was spent by any of them, and the server still answers.
    let answer = s.call(request("shop", vec![user()], 0)).await.unwrap();
    assert_eq!(
        (answer.overall_code, answer.statuses[0].limit_remaining),
        (1, 3)
    );
    let text = s.server.metrics_text();
    assert_eq!(
        crate::support::metric(&text, "cellrate_rls_calls_total{code=\"invalid_argument\"}"),
        Some(12.0)
    );
    s.stop().await;
}
