//! Every field of the answers, over a tonic client of the real protos, against exact buckets
//! under the same test clock: the all-or-nothing rule, each descriptor's own cost and
//! figures, and what each kind of rule answers.

use crate::support::{descriptor, overridden, request, Running};
use cellrate::{Limiter, ManualClock, Quota};
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::{
    rate_limit::Unit, Code, DescriptorStatus,
};
use envoy_types::pb::envoy::service::ratelimit::v3::RateLimitResponse;
use envoy_types::pb::google::protobuf::UInt64Value;
use std::time::Duration;

pub const SHOP: &str = r#"
domain: shop
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 10, burst: 4, name: per-user}
  - key: org
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: path
    value: /slow
    rate_limit: {requests_per_unit: 10, per: 30s, name: slow}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: second, requests_per_unit: 2, name: shadow}
  - key: free
    rate_limit: {unlimited: true}
  - key: blocked
    rate_limit: {unit: hour, requests_per_unit: 0}
  - key: wild
    value: "img*"
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: team
    value: "a*"
    share_threshold: true
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: api
    rate_limit: {unit: second, requests_per_unit: 100, name: api}
    descriptors:
      - key: method
        value: POST
        rate_limit: {unit: second, requests_per_unit: 5, name: api-post, replaces: [{name: api}]}
"#;

/// The answer an exact bucket gives alone to `cost` now, spending it if `spend` and it
/// admits: (admits, remaining, duration_until_reset) as the server reports them.
fn expect(bucket: &Limiter<ManualClock>, cost: u32, spend: bool) -> (bool, u32, Duration) {
    let q = bucket.quota();
    let (t, d) = (
        q.emission_interval().as_nanos(),
        q.replenish_all().as_nanos(),
    );
    let ahead = bucket.check_n(0).unwrap().reset_after().as_nanos();
    let need = ahead + u128::from(cost) * t;
    if need <= d {
        if spend {
            let allowed = bucket.check_n(cost).unwrap();
            return (true, allowed.remaining(), allowed.reset_after());
        }
        return (
            true,
            ((d - ahead) / t) as u32,
            Duration::from_nanos(ahead as u64),
        );
    }
    let remaining = (d.saturating_sub(ahead) / t) as u32;
    let until = if cost <= q.burst() {
        let retry = need - d;
        Duration::from_secs(retry.div_ceil(1_000_000_000) as u64)
    } else {
        Duration::from_nanos(ahead as u64)
    };
    (false, remaining, until)
}

fn until(status: &DescriptorStatus) -> Duration {
    let d = status
        .duration_until_reset
        .as_ref()
        .expect("a bucket reports its reset");
    Duration::new(d.seconds as u64, d.nanos as u32)
}

fn check(status: &DescriptorStatus, want: (bool, u32, Duration), rpu: u32, unit: Unit, name: &str) {
    let code = if want.0 { Code::Ok } else { Code::OverLimit } as i32;
    assert_eq!(status.code, code, "{status:?} vs {want:?}");
    assert_eq!(status.limit_remaining, want.1, "{status:?} vs {want:?}");
    assert_eq!(until(status), want.2, "{status:?} vs {want:?}");
    let limit = status.current_limit.as_ref().unwrap();
    assert_eq!(
        (limit.requests_per_unit, limit.unit, limit.name.as_str()),
        (rpu, unit as i32, name)
    );
}

/// Two limits per request on a random schedule of times and costs: each answer's every field
/// equals the exact buckets', and a refused request spends in neither.
#[tokio::test]
async fn random_schedule_matches_exact_buckets() {
    let mut s = Running::start(&[("shop.yaml", SHOP)], |_| {}).await;
    let user = Limiter::with_clock(
        Quota::try_new(Duration::from_millis(100), 4).unwrap(),
        s.clock.clone(),
    );
    let org = Limiter::with_clock(
        Quota::try_new(Duration::from_millis(600), 100).unwrap(),
        s.clock.clone(),
    );
    let mut rng = fastrand::Rng::with_seed(7);
    let (mut admitted, mut refused) = (0, 0);
    for _ in 0..400 {
        s.clock
            .advance(Duration::from_nanos(rng.u64(0..150_000_000)));
        let (cost_user, cost_org) = (rng.u32(0..6), rng.u32(0..9));
        let mut d_user = descriptor(&[("user", "u1")]);
        d_user.hits_addend = Some(UInt64Value {
            value: u64::from(cost_user),
        });
        let mut d_org = descriptor(&[("org", "o1")]);
        d_org.hits_addend = Some(UInt64Value {
            value: u64::from(cost_org),
        });
        let answer = s
            .call(request("shop", vec![d_user, d_org], 0))
            .await
            .unwrap();
        let alone = (
            expect(&user, cost_user, false),
            expect(&org, cost_org, false),
        );
        let both = alone.0 .0 && alone.1 .0;
        let want = if both {
            admitted += 1;
            (expect(&user, cost_user, true), expect(&org, cost_org, true))
        } else {
            refused += 1;
            alone
        };
        let overall = if both { Code::Ok } else { Code::OverLimit } as i32;
        assert_eq!(answer.overall_code, overall);
        check(&answer.statuses[0], want.0, 10, Unit::Second, "per-user");
        check(&answer.statuses[1], want.1, 100, Unit::Minute, "");
    }
    assert!(
        admitted > 50 && refused > 50,
        "{admitted} admitted, {refused} refused"
    );
    s.stop().await;
}

fn codes(answer: &RateLimitResponse) -> (i32, Vec<i32>) {
    (
        answer.overall_code,
        answer.statuses.iter().map(|s| s.code).collect(),
    )
}

const OK: i32 = Code::Ok as i32;
const OVER: i32 = Code::OverLimit as i32;

/// `per: 30s` is reported in the shortest unit holding whole periods (10 per 30 s is 20 per
/// MINUTE) and decided at one token per 3 s, burst 10.
#[tokio::test]
async fn a_period_is_reported_scaled_and_decided_exactly() {
    let mut s = Running::start(&[("shop.yaml", SHOP)], |_| {}).await;
    let slow = || request("shop", vec![descriptor(&[("path", "/slow")])], 0);
    for left in (0..10).rev() {
        let answer = s.call(slow()).await.unwrap();
        let st = &answer.statuses[0];
        assert_eq!((st.code, st.limit_remaining), (OK, left));
        let limit = st.current_limit.as_ref().unwrap();
        assert_eq!(
            (limit.requests_per_unit, limit.unit, limit.name.as_str()),
            (20, Unit::Minute as i32, "slow")
        );
    }
    let refused = s.call(slow()).await.unwrap();
    assert_eq!(codes(&refused), (OVER, vec![OVER]));
    assert_eq!(until(&refused.statuses[0]), Duration::from_secs(3));
    s.clock.advance(Duration::from_millis(2_999));
    assert_eq!(codes(&s.call(slow()).await.unwrap()).0, OVER);
    s.clock.advance(Duration::from_millis(1));
    assert_eq!(codes(&s.call(slow()).await.unwrap()).0, OK);
    s.stop().await;
}

/// A shadow rule decides and spends as an enforced one, shows OVER_LIMIT, and never refuses.
#[tokio::test]
async fn shadow_rules_report_but_never_refuse() {
    let mut s = Running::start(&[("shop.yaml", SHOP)], |_| {}).await;
    let call = || {
        request(
            "shop",
            vec![descriptor(&[("shadow", "x")]), descriptor(&[("user", "u")])],
            0,
        )
    };
    for _ in 0..2 {
        assert_eq!(codes(&s.call(call()).await.unwrap()), (OK, vec![OK, OK]));
    }
    assert_eq!(codes(&s.call(call()).await.unwrap()), (OK, vec![OVER, OK]));
    let text = s.server.metrics_text();
    let shadow = "cellrate_rls_decisions_total{domain=\"shop\",rule=\"shadow\",outcome=\"shadow_over_limit\"}";
    assert_eq!(crate::support::metric(&text, shadow), Some(1.0), "{text}");
    s.stop().await;
}

/// No rule, an unknown domain, `unlimited`, `requests_per_unit: 0`.
#[tokio::test]
async fn rules_without_buckets() {
    let mut s = Running::start(&[("shop.yaml", SHOP)], |_| {}).await;
    let none = s
        .call(request("shop", vec![descriptor(&[("nobody", "x")])], 0))
        .await
        .unwrap();
    assert_eq!(codes(&none), (OK, vec![OK]));
    assert_eq!(none.statuses[0].current_limit, None);
    assert_eq!(none.statuses[0].limit_remaining, 0);
    let unknown = s
        .call(request("elsewhere", vec![descriptor(&[("user", "x")])], 0))
        .await
        .unwrap();
    assert_eq!(codes(&unknown), (OK, vec![OK]));
    let free = s
        .call(request("shop", vec![descriptor(&[("free", "x")])], 1000))
        .await
        .unwrap();
    assert_eq!(
        (codes(&free), free.statuses[0].limit_remaining),
        ((OK, vec![OK]), u32::MAX)
    );
    // Blocked refuses the whole request, and the user's bucket spends nothing.
    let blocked = s
        .call(request(
            "shop",
            vec![
                descriptor(&[("blocked", "x")]),
                descriptor(&[("user", "u")]),
            ],
            0,
        ))
        .await
        .unwrap();
    assert_eq!(codes(&blocked), (OVER, vec![OVER, OK]));
    assert_eq!(blocked.statuses[1].limit_remaining, 4);
    let limit = blocked.statuses[0].current_limit.as_ref().unwrap();
    assert_eq!(
        (limit.requests_per_unit, limit.unit),
        (0, Unit::Hour as i32)
    );
    s.stop().await;
}

/// A wildcard gives each value its own bucket; with `share_threshold` they share one.
#[tokio::test]
async fn wildcards_per_value_or_shared() {
    let mut s = Running::start(&[("shop.yaml", SHOP)], |_| {}).await;
    for value in ["img1", "img2"] {
        for _ in 0..3 {
            let a = s
                .call(request("shop", vec![descriptor(&[("wild", value)])], 0))
                .await
                .unwrap();
            assert_eq!(codes(&a).0, OK);
        }
    }
    for (value, want) in [("a1", OK), ("a2", OK), ("a3", OK), ("a4", OVER)] {
        let a = s
            .call(request("shop", vec![descriptor(&[("team", value)])], 0))
            .await
            .unwrap();
        assert_eq!(codes(&a).0, want, "{value}");
    }
    s.stop().await;
}

/// `replaces`: when `api-post` matches, `api` is not applied to the same request.
#[tokio::test]
async fn replaces_sets_a_rule_aside() {
    let mut s = Running::start(&[("shop.yaml", SHOP)], |_| {}).await;
    let both = || {
        request(
            "shop",
            vec![
                descriptor(&[("api", "k")]),
                descriptor(&[("api", "k"), ("method", "POST")]),
            ],
            0,
        )
    };
    let a = s.call(both()).await.unwrap();
    assert_eq!(codes(&a), (OK, vec![OK, OK]));
    assert_eq!(a.statuses[0].current_limit, None);
    assert_eq!(a.statuses[1].limit_remaining, 4);
    s.stop().await;
}

/// A per-call override is a bucket of its own, under its own quota; distinct overrides per
/// domain are bounded.
#[tokio::test]
async fn overrides_are_buckets_of_their_own() {
    let mut s = Running::start(&[("shop.yaml", SHOP)], |settings| {
        settings.max_overrides = 2
    })
    .await;
    let o = |n| {
        request(
            "shop",
            vec![overridden(&[("user", "u")], n, Unit::Minute as i32)],
            0,
        )
    };
    for left in (0..3).rev() {
        let a = s.call(o(3)).await.unwrap();
        assert_eq!((codes(&a).0, a.statuses[0].limit_remaining), (OK, left));
        let limit = a.statuses[0].current_limit.as_ref().unwrap();
        assert_eq!(
            (limit.requests_per_unit, limit.unit),
            (3, Unit::Minute as i32)
        );
    }
    assert_eq!(codes(&s.call(o(3)).await.unwrap()).0, OVER);
    // The rule's own bucket of the same descriptor is untouched.
    let a = s
        .call(request("shop", vec![descriptor(&[("user", "u")])], 0))
        .await
        .unwrap();
    assert_eq!(a.statuses[0].limit_remaining, 3);
    assert_eq!(codes(&s.call(o(5)).await.unwrap()).0, OK);
    let third = s.call(o(7)).await.unwrap_err();
    assert_eq!(third.code(), tonic::Code::InvalidArgument);
    s.stop().await;
}

/// The two header forms.
#[tokio::test]
async fn response_headers() {
    let mut s = Running::start(&[("shop.yaml", SHOP)], |settings| {
        settings.response_headers = cellrate_server::settings::Headers::Ietf
    })
    .await;
    let a = s
        .call(request(
            "shop",
            vec![descriptor(&[("user", "u")]), descriptor(&[("nobody", "x")])],
            0,
        ))
        .await
        .unwrap();
    let fields: Vec<(String, String)> = a
        .response_headers_to_add
        .iter()
        .map(|h| (h.key.clone(), h.value.clone()))
        .collect();
    assert_eq!(
        fields,
        [
            (
                "RateLimit-Policy".to_owned(),
                "\"per-user\";q=10;w=1".to_owned()
            ),
            ("RateLimit".to_owned(), "\"per-user\";r=3;t=1".to_owned()),
        ]
    );
    s.stop().await;
    let mut s = Running::start(&[("shop.yaml", SHOP)], |settings| {
        settings.response_headers = cellrate_server::settings::Headers::Draft
    })
    .await;
    let a = s
        .call(request("shop", vec![descriptor(&[("org", "o")])], 30))
        .await
        .unwrap();
    let fields: Vec<(String, String)> = a
        .response_headers_to_add
        .iter()
        .map(|h| (h.key.clone(), h.value.clone()))
        .collect();
    assert_eq!(
        fields,
        [
            ("RateLimit-Limit".to_owned(), "100, 100;w=60".to_owned()),
            ("RateLimit-Remaining".to_owned(), "70".to_owned()),
            ("RateLimit-Reset".to_owned(), "18".to_owned()),
        ]
    );
    s.stop().await;
}

/// grpc.health.v1 answers SERVING for the RLS service and the server as a whole.
#[tokio::test]
async fn grpc_health() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};
    let s = Running::start(&[("shop.yaml", SHOP)], |_| {}).await;
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{}", s.grpc_port))
            .unwrap()
            .connect()
            .await
            .unwrap();
    let mut health = HealthClient::new(channel);
    for service in ["", "envoy.service.ratelimit.v3.RateLimitService"] {
        let answer = health
            .check(HealthCheckRequest {
                service: service.to_owned(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(answer.status, ServingStatus::Serving as i32, "{service:?}");
    }
    assert_eq!(s.get("/healthz").await.0, 200);
    assert_eq!(s.get("/readyz").await.0, 200);
    s.stop().await;
}

/// `detailed_metric` labels a rule's counts by the descriptor's values, for at most
/// `--detailed-metric-limit` of them; the rest are `_other`. Other rules never carry a value.
#[tokio::test]
async fn detailed_metrics_are_bounded() {
    let yaml = "domain: d\ndescriptors:\n  - key: ip\n    detailed_metric: true\n    rate_limit: {unit: second, requests_per_unit: 9, name: per-ip}\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 9}\n";
    let mut s = Running::start(&[("d.yaml", yaml)], |settings| {
        settings.detailed_metric_limit = 2
    })
    .await;
    for value in ["a", "b", "c", "d", "a"] {
        s.call(request(
            "d",
            vec![descriptor(&[("ip", value)]), descriptor(&[("user", value)])],
            0,
        ))
        .await
        .unwrap();
    }
    let (status, text) = s.get("/metrics").await;
    assert_eq!(status, 200);
    let series = |v: &str| {
        format!("cellrate_rls_decisions_total{{domain=\"d\",rule=\"per-ip\",value=\"{v}\",outcome=\"ok\"}}")
    };
    assert_eq!(
        crate::support::metric(&text, &series("ip_a")),
        Some(2.0),
        "{text}"
    );
    assert_eq!(crate::support::metric(&text, &series("ip_b")), Some(1.0));
    assert_eq!(crate::support::metric(&text, &series("_other")), Some(2.0));
    assert_eq!(crate::support::metric(&text, &series("ip_c")), None);
    let user = "cellrate_rls_decisions_total{domain=\"d\",rule=\"d.user\",outcome=\"ok\"}";
    assert_eq!(crate::support::metric(&text, user), Some(5.0));
    assert!(!text.contains("user_a"), "{text}");
    s.stop().await;
}
