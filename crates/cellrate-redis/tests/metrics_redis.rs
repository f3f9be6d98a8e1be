//! The Redis limiter's metrics and most-refused keys, against a real `redis-server` (and a
//! fault proxy for outcomes that are unknown): exact values after scripted sequences.
#![cfg(feature = "metrics")]

use crate::metrics_support;
// Only freezing is used here.
#[allow(dead_code)]
use crate::proxy;
use crate::redis_support;

use cellrate::Quota;
use cellrate_redis::{FailurePolicy, RedisLimiter, RedisOptions};
use metrics_support::{captured, counters, Value};
use proxy::FaultProxy;
use redis_support::{connected, free_port, runtime, RedisServer};
use std::collections::BTreeMap;

fn options() -> RedisOptions {
    redis_support::patient()
}

/// Every series a Redis limiter named `name` publishes, with these values (in the order of
/// the `Stats` fields: allowed, denied, peeks, cached, failed open, failed closed, local
/// allowed, local denied, unknown, errors).
fn redis_series(name: &str, v: [u64; 10]) -> BTreeMap<String, u64> {
    let l = format!("limiter={name}");
    let failure = |policy: &str, outcome: &str| {
        format!("cellrate_redis_failures_total{{{l},outcome={outcome},policy={policy}}}")
    };
    BTreeMap::from([
        (format!("cellrate_allowed_total{{{l}}}"), v[0]),
        (format!("cellrate_denied_total{{{l}}}"), v[1]),
        (format!("cellrate_peeks_total{{{l}}}"), v[2]),
        (format!("cellrate_cached_denials_total{{{l}}}"), v[3]),
        (failure("fail_open", "allowed"), v[4]),
        (failure("fail_closed", "denied"), v[5]),
        (failure("local", "allowed"), v[6]),
        (failure("local", "denied"), v[7]),
        (format!("cellrate_unknown_outcomes_total{{{l}}}"), v[8]),
        (format!("cellrate_usage_errors_total{{{l}}}"), v[9]),
        (format!("cellrate_evictions_total{{{l},reason=idle}}"), 0),
        (
            format!("cellrate_evictions_total{{{l},reason=overflow}}"),
            0,
        ),
        (format!("cellrate_overflow_denials_total{{{l}}}"), 0),
        (format!("cellrate_out_of_memory_total{{{l}}}"), 0),
    ])
}

fn owned(m: BTreeMap<&str, u64>) -> BTreeMap<String, u64> {
    m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

#[test]
fn redis_decisions_are_published_under_the_name() {
    let options = options().deny_cache(16);
    let Some((server, rt, limiter)) =
        connected("redis_decisions_are_published", Quota::per_hour(3), options)
    else {
        return;
    };
    let limiter = limiter.named("shared");
    assert_eq!(limiter.name(), Some("shared"));
    for _ in 0..3 {
        rt.block_on(limiter.check_key("a")).unwrap();
    }
    rt.block_on(limiter.check_key("a")).unwrap_err(); // Redis refuses, the cache remembers
    rt.block_on(limiter.check_key("a")).unwrap_err(); // the deny cache refuses
    rt.block_on(limiter.check_key_n("b", 0)).unwrap(); // a peek
    let ((), series) = captured(|| limiter.publish_metrics());
    assert_eq!(
        owned(counters(&series)),
        redis_series("shared", [3, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    );
    assert_eq!(
        series["cellrate_keys{limiter=shared}"],
        Value::Gauge(0.0),
        "no local fallback table"
    );
    // Unnamed, the same limiter publishes nothing but still counts.
    let unnamed = rt
        .block_on(RedisLimiter::connect_with(
            &server.url(),
            Quota::per_hour(3),
            redis_support::patient(),
        ))
        .unwrap();
    rt.block_on(unnamed.check_key("c")).unwrap();
    let ((), series) = captured(|| unnamed.publish_metrics());
    assert!(series.is_empty(), "{series:?}");
    assert_eq!(unnamed.stats().allowed, 1);
}

#[test]
fn redis_failures_are_published_by_policy() {
    if !redis_support::redis_available("redis_failures_are_published_by_policy") {
        return;
    }
    let rt = runtime();
    let _guard = rt.enter();
    let url = format!("redis://127.0.0.1:{}", free_port());
    let lazy = |policy| {
        RedisLimiter::connect_lazy(&url, Quota::per_hour(4), options().failure_policy(policy))
            .unwrap()
    };
    let open = lazy(FailurePolicy::FailOpen).named("open");
    let closed = lazy(FailurePolicy::FailClosed).named("closed");
    let local = lazy(FailurePolicy::Local { servers: 2 }).named("local");
    rt.block_on(open.check_key("k")).unwrap();
    rt.block_on(closed.check_key("k")).unwrap_err();
    // This server's share: 2 of the 4 tokens, in a local table holding one key.
    for _ in 0..2 {
        rt.block_on(local.check_key("k")).unwrap();
    }
    rt.block_on(local.check_key("k")).unwrap_err();

    let ((), series) = captured(|| {
        open.publish_metrics();
        closed.publish_metrics();
        local.publish_metrics();
    });
    let mut expected = redis_series("open", [0, 0, 0, 0, 1, 0, 0, 0, 0, 0]);
    expected.extend(redis_series("closed", [0, 0, 0, 0, 0, 1, 0, 0, 0, 0]));
    expected.extend(redis_series("local", [0, 0, 0, 0, 0, 0, 2, 1, 0, 0]));
    assert_eq!(owned(counters(&series)), expected);
    assert_eq!(series["cellrate_keys{limiter=local}"], Value::Gauge(1.0));
    assert_eq!(series["cellrate_keys{limiter=open}"], Value::Gauge(0.0));
    assert_eq!(local.stats().keys, 1);
}

#[test]
fn redis_unknown_outcomes_are_published() {
    let Some(server) = RedisServer::start("redis_unknown_outcomes_are_published") else {
        return;
    };
    let proxy = FaultProxy::start(server.port);
    let rt = runtime();
    let limiter = rt
        .block_on(RedisLimiter::connect_with(
            &proxy.url(),
            Quota::per_hour(10),
            options(),
        ))
        .unwrap()
        .named("flaky");
    rt.block_on(limiter.check_key("k")).unwrap();
    // Sent, then no reply within the deadline: unknown, and admitted by FailOpen.
    proxy.freeze_open();
    rt.block_on(limiter.check_key("k")).unwrap();
    let ((), series) = captured(|| limiter.publish_metrics());
    assert_eq!(
        owned(counters(&series)),
        redis_series("flaky", [1, 0, 0, 0, 1, 0, 0, 0, 1, 0])
    );
}

#[test]
fn redis_the_most_refused_keys_are_tracked_in_bounded_memory() {
    let Some((_server, rt, limiter)) = connected(
        "redis_the_most_refused_keys",
        Quota::per_hour(1),
        RedisOptions::default(),
    ) else {
        return;
    };
    assert!(limiter.top_denied().is_empty(), "not tracked unless asked");
    let limiter = limiter.track_top_denied(4);
    // A skewed sequence: "hot" refused 19 times, "warm" 9, then ten cold keys once each.
    let check = |key: &str| rt.block_on(limiter.check_key(key)).is_ok();
    assert_eq!((0..20).filter(|_| check("hot")).count(), 1);
    assert_eq!((0..10).filter(|_| check("warm")).count(), 1);
    for i in 0..10 {
        let key = format!("cold-{i}");
        assert!(check(&key) && !check(&key));
    }
    // Four entries at most. The heavy keys are exact; the two entries the cold keys took turns
    // in carry the counts of those they replaced (Space-Saving's overestimate).
    let expected = [("hot", 19), ("warm", 9), ("cold-8", 5), ("cold-9", 5)];
    let expected: Vec<_> = expected.iter().map(|(k, n)| (k.to_string(), *n)).collect();
    assert_eq!(limiter.top_denied(), expected);
    assert_eq!(limiter.stats().denied, 19 + 9 + 10);
}

/// Limiters of one name add up in one series, publishing twice hands nothing over twice, and a
/// limiter made again under a name goes on from where the series is (a total set as a maximum
/// would read 3, then stay at 3 while the new limiter counts up to it).
#[test]
fn redis_limiters_of_one_name_add_up_and_a_new_one_counts_from_the_series() {
    let Some((server, rt, first)) = connected(
        "redis_limiters_of_one_name_add_up",
        Quota::per_hour(100),
        options(),
    ) else {
        return;
    };
    let connect = || {
        rt.block_on(RedisLimiter::connect_with(
            &server.url(),
            Quota::per_hour(100),
            options(),
        ))
        .unwrap()
        .named("dup")
    };
    let first = first.named("dup");
    let second = connect();
    let allowed = "cellrate_allowed_total{limiter=dup}";
    let ((), series) = captured(|| {
        for _ in 0..3 {
            rt.block_on(first.check_key("a")).unwrap();
        }
        rt.block_on(second.check_key("b")).unwrap();
        first.publish_metrics();
        second.publish_metrics();
        first.clone().publish_metrics(); // a clone shares what was published
        drop((first, second));
        let again = connect();
        rt.block_on(again.check_key("c")).unwrap();
        again.publish_metrics();
    });
    assert_eq!(counters(&series)[allowed], 5);
}
