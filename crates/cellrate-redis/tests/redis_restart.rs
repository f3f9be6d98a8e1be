//! SIGKILL and restart of a real `redis-server` under each failure policy: while it is down,
//! calls are answered at once by the policy, as known failures (nothing was sent); once it is
//! back, Redis decides again.

use crate::redis_support;

use cellrate::Quota;
use cellrate_redis::RedisStats as Stats;
use cellrate_redis::{FailurePolicy, RedisLimiter, RedisOptions};
use redis_support::{runtime, RedisServer};
use std::time::{Duration, Instant};

/// 20 tokens, then one an hour: every admission within a test comes from the burst.
fn quota() -> Quota {
    Quota::per_hour(1).with_burst(20)
}

/// Runs `check` until Redis decides again after a restart; fails after 5 s.
fn until_redis_decides(rt: &tokio::runtime::Runtime, limiter: &RedisLimiter) {
    let started = Instant::now();
    while rt.block_on(limiter.try_check_key_n("probe", 0)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "never came back"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kills the server, makes 50 calls, restarts it. Returns the answers while down (admitted
/// or not), how long those calls took, and the stats of those calls only.
fn down_then_up(policy: FailurePolicy, test: &str) -> Option<(Vec<bool>, Duration, Stats)> {
    let mut server = RedisServer::start(test)?;
    let rt = runtime();
    let options = RedisOptions::default()
        .failure_policy(policy)
        .deadline(Duration::from_millis(100))
        .probe_interval(Duration::from_millis(20));
    let limiter = rt
        .block_on(RedisLimiter::connect_with(&server.url(), quota(), options))
        .unwrap();
    assert!(rt.block_on(limiter.check_key("k")).is_ok());
    server.kill();
    std::thread::sleep(Duration::from_millis(20));
    let before = limiter.stats();
    let started = Instant::now();
    let answers: Vec<bool> = (0..50)
        .map(|_| rt.block_on(limiter.check_key("k")).is_ok())
        .collect();
    let took = started.elapsed();
    let during = limiter.stats();
    server.restart();
    until_redis_decides(&rt, &limiter);
    // The restarted server is empty: a full bucket again.
    assert_eq!(rt.block_on(limiter.check_key("k")).unwrap().remaining(), 19);
    let mut stats = during;
    stats.allowed -= before.allowed;
    Some((answers, took, stats))
}

/// What every policy shares: fast answers, no decision from Redis, at most one unknown (the
/// one call that may meet the connection as it drops). Fast: 50 calls that each waited out
/// their 100 ms deadline would take 5 s; 2.5 s is far more than a loaded machine adds to 50
/// calls that fail at once and a reconnect's backoff.
fn check_common(took: Duration, stats: &Stats) {
    assert!(
        took < Duration::from_millis(2_500),
        "50 calls to a dead server took {took:?}: they should fail at once"
    );
    assert_eq!(stats.allowed + stats.denied, 0, "{stats:?}");
    assert!(
        stats.unknown <= 1,
        "unsent calls counted unknown: {stats:?}"
    );
}

#[test]
fn redis_sigkill_fail_open_admits_at_once() {
    let Some((answers, took, stats)) =
        down_then_up(FailurePolicy::FailOpen, "redis_sigkill_fail_open")
    else {
        return;
    };
    check_common(took, &stats);
    assert!(answers.iter().all(|&ok| ok));
    assert_eq!(stats.failed_open, 50, "{stats:?}");
}

#[test]
fn redis_sigkill_fail_closed_refuses_at_once() {
    let Some((answers, took, stats)) =
        down_then_up(FailurePolicy::FailClosed, "redis_sigkill_fail_closed")
    else {
        return;
    };
    check_common(took, &stats);
    assert!(answers.iter().all(|&ok| !ok));
    assert_eq!(stats.failed_closed, 50, "{stats:?}");
}

#[test]
fn redis_sigkill_local_fallback_admits_this_servers_share() {
    let Some((answers, took, stats)) = down_then_up(
        FailurePolicy::Local { servers: 4 },
        "redis_sigkill_local_fallback",
    ) else {
        return;
    };
    check_common(took, &stats);
    // A quarter of the burst of 20, then one token per 4 hours.
    let admitted = answers.iter().filter(|&&ok| ok).count();
    assert_eq!(admitted, 5, "{answers:?}");
    assert!(answers[..5].iter().all(|&ok| ok));
    assert_eq!(
        (stats.local_allowed, stats.local_denied),
        (5, 45),
        "{stats:?}"
    );
    assert_eq!(stats.failed_open + stats.failed_closed, 0, "{stats:?}");
}

#[test]
fn redis_local_fallback_of_all_of_is_all_or_nothing() {
    let Some(mut server) = RedisServer::start("redis_local_fallback_of_all_of") else {
        return;
    };
    let rt = runtime();
    let options = RedisOptions::default()
        .failure_policy(FailurePolicy::Local { servers: 2 })
        .local_quota(Quota::per_hour(1).with_burst(3));
    let limiter = rt
        .block_on(RedisLimiter::connect_with(&server.url(), quota(), options))
        .unwrap();
    server.kill();
    // The limiter's own quota uses the local quota given (3); the org's is split (8 / 2).
    let org = Quota::per_hour(1).with_burst(8);
    let limits = [("{a}:user", quota()), ("{a}:org", org)];
    assert!(rt.block_on(limiter.check_all_of_n(&limits, 2)).is_ok());
    assert!(rt.block_on(limiter.check_all_of_n(&limits, 2)).is_err()); // user: 1 left
    assert!(rt.block_on(limiter.check_key_n("{a}:user", 1)).is_ok());
    // The refused all-of spent nothing in the org's bucket: 2 of its 4 are left.
    let other = [("{a}:other", quota()), ("{a}:org", org)];
    assert!(rt.block_on(limiter.check_all_of_n(&other, 2)).is_ok());
    assert!(rt.block_on(limiter.check_all_of_n(&other, 1)).is_err());
    let stats = limiter.stats();
    assert_eq!(
        (stats.local_allowed, stats.local_denied),
        (3, 2),
        "{stats:?}"
    );
}
