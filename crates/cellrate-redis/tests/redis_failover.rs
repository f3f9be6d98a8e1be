//! Failover: a primary demoted behind one name (a proxy moved to the promoted replica, as a
//! managed endpoint or a virtual IP moves), the replies Redis 5 and 6 wrap in script errors,
//! and Sentinel. The limiter must leave a server that cannot take writes and follow the new
//! primary, and admit no more than the replication lag allows.

use crate::proxy;
use crate::redis_support;
use crate::sentinel;
use crate::stand_in;

use cellrate::Quota;
use cellrate_redis::{FailurePolicy, RedisLimiter};
use proxy::FaultProxy;
use redis_support::{runtime, RedisServer};
use sentinel::Sentinel;
use stand_in::StandIn;
use std::time::{Duration, Instant};

/// The fault tests' options, with a connection timeout and deadlines of a second: these tests
/// are about which server decides, told by replies (`READONLY`, Sentinel's answer); a call that
/// a loaded machine let miss a short deadline would be answered by the policy instead.
fn options() -> cellrate_redis::RedisOptions {
    redis_support::fast_options()
        .deadline(Duration::from_secs(1))
        .connection_timeout(Duration::from_secs(1))
}

/// Whether Redis decided `call` (the failure policy did not answer it), and its answer.
fn decided<T>(limiter: &RedisLimiter, call: impl FnOnce() -> T) -> (bool, T) {
    let before = limiter.stats().failed_open;
    let answer = call();
    (limiter.stats().failed_open == before, answer)
}

/// Spends the whole quota (3) of key `k`, then waits until the replica has it: the replication
/// lag then allows no over-admission. It spends until Redis itself refuses: a spend answered by
/// the policy (a deadline missed on a loaded machine) may or may not have been made. (`WAIT`
/// would not do: it waits for the writes of its own connection, which made none.)
fn spend_and_sync(
    rt: &tokio::runtime::Runtime,
    limiter: &RedisLimiter,
    primary: &RedisServer,
    replica: &RedisServer,
) {
    for _ in 0..20 {
        let (decided, answer) = decided(limiter, || rt.block_on(limiter.check_key("k")));
        if decided && answer.is_err() {
            let allowed = limiter.stats().allowed;
            assert!(allowed <= 3, "Redis admitted {allowed} of a quota of 3");
            let tat = |server: &RedisServer| -> Option<String> {
                server.query(redis::cmd("GET").arg("cellrate:k")).unwrap()
            };
            let written = tat(primary);
            assert!(written.is_some(), "no TAT written");
            let deadline = Instant::now() + Duration::from_secs(10);
            while tat(replica) != written {
                assert!(Instant::now() < deadline, "the replica never had k");
                std::thread::sleep(Duration::from_millis(10));
            }
            return;
        }
    }
    panic!("20 spends of a quota of 3, and Redis never refused");
}

/// Calls for 1.5 s on a fresh key, then checks that the new primary decided: its 3 tokens and
/// no more, `k` still full, and at most `undecided` calls answered by the policy meanwhile.
fn follows(
    rt: &tokio::runtime::Runtime,
    limiter: &RedisLimiter,
    new_primary: &RedisServer,
    undecided: u64,
) {
    let before = limiter.stats();
    let started = Instant::now();
    let mut answers = Vec::new();
    while started.elapsed() < Duration::from_millis(1500) {
        answers.push(decided(limiter, || {
            rt.block_on(limiter.check_key("fresh")).is_ok()
        }));
        std::thread::sleep(Duration::from_millis(10));
    }
    let stats = limiter.stats();
    // `k` must be denied by Redis itself: an answer the failure policy gave (a deadline missed
    // on a busy machine) tells nothing of what the new primary holds, so it is asked again.
    let k_denied = (0..20).find_map(|_| {
        let (decided, answer) = decided(limiter, || rt.block_on(limiter.check_key("k")));
        decided.then_some(answer.is_err())
    });
    assert_eq!(k_denied, Some(true), "k was full: {stats:?}");
    // 3 tokens of `fresh` and no more: a call whose outcome is unknown (sent, then its deadline
    // passed) may have spent one of them unseen.
    let allowed = stats.allowed - before.allowed;
    let unknown = stats.unknown - before.unknown;
    assert!(
        allowed <= 3 && allowed + unknown >= 3,
        "{allowed} admitted by Redis, {unknown} unknown: {stats:?}"
    );
    assert!(
        stats.failed_open - before.failed_open <= undecided,
        "{stats:?}"
    );
    let last: Vec<bool> = answers
        .iter()
        .rev()
        .filter(|(decided, _)| *decided)
        .take(20)
        .map(|&(_, ok)| ok)
        .collect();
    assert!(!last.is_empty() && last.iter().all(|ok| !ok), "{stats:?}");
    let fresh: Option<String> = new_primary
        .query(redis::cmd("GET").arg("cellrate:fresh"))
        .unwrap();
    assert!(fresh.is_some(), "decided on the new primary");
}

/// A primary and a replica of it, in sync.
fn pair(test: &str) -> Option<(RedisServer, RedisServer)> {
    let primary = RedisServer::start(test)?;
    let port = primary.port.to_string();
    let replica = RedisServer::start_with(test, &["--replicaof", "127.0.0.1", &port])?;
    replica.wait_in_sync();
    Some((primary, replica))
}

/// Promotes `replica` and makes `primary` its replica, as a failover does.
fn fail_over(primary: &RedisServer, replica: &RedisServer) {
    let _: () = replica
        .query(redis::cmd("REPLICAOF").arg("NO").arg("ONE"))
        .unwrap();
    let port = replica.port.to_string();
    let _: () = primary
        .query(redis::cmd("REPLICAOF").arg("127.0.0.1").arg(&port))
        .unwrap();
}

#[test]
fn redis_a_demoted_primary_is_left_for_the_promoted_replica() {
    let Some((primary, replica)) = pair("redis_a_demoted_primary_is_left") else {
        return;
    };
    let proxy = FaultProxy::start(primary.port);
    let rt = runtime();
    let limiter = rt
        .block_on(RedisLimiter::connect_with(
            &proxy.url(),
            Quota::per_hour(3),
            options().failure_policy(FailurePolicy::FailOpen),
        ))
        .unwrap();
    spend_and_sync(&rt, &limiter, &primary, &replica);
    fail_over(&primary, &replica);
    proxy.retarget(replica.port);
    // The limiter still holds its connection to the old primary, which now says READONLY to
    // every spend (a refusal needs no write, so a fresh key shows it): the READONLY, and the
    // calls made while the new connection comes up (a few deadlines on a busy machine), get no
    // decision.
    follows(&rt, &limiter, &replica, 10);
}

#[test]
fn redis_5_and_6_script_errors_are_told_by_their_wrapped_code() {
    if !redis_support::redis_available("redis_5_and_6_script_errors") {
        return;
    }
    let rt = runtime();
    for (code, wrapped) in [
        (
            "READONLY",
            "-READONLY You can't write against a read only replica.",
        ),
        (
            "OOM",
            "-OOM command not allowed when used memory > 'maxmemory'.",
        ),
        (
            "MISCONF",
            "MISCONF Redis is configured to save RDB snapshots",
        ),
    ] {
        let server = StandIn::start(&format!(
            "ERR Error running script (call to f_8ea2): @user_script:10: @user_script: 10: \
             {wrapped}"
        ));
        let limiter = rt
            .block_on(RedisLimiter::connect_with(
                &server.url(),
                Quota::per_second(10),
                options().failure_policy(FailurePolicy::FailClosed),
            ))
            .unwrap();
        let err = rt.block_on(limiter.try_check_key_n("k", 1)).unwrap_err();
        assert_eq!(err.reply_code(), Some(code), "{err:?}");
        assert!(!err.is_usage(), "{err:?}");
        // Answered by the policy (a retry time), not refused as a mistake (none).
        let denied = rt.block_on(limiter.check_key("k")).unwrap_err();
        assert_eq!(denied.retry_after(), Some(Duration::from_secs(1)), "{code}");
        let stats = limiter.stats();
        assert_eq!(
            (stats.errors, stats.failed_closed),
            (0, 1),
            "{code}: {stats:?}"
        );
        if code == "READONLY" {
            // Not a primary: the connection was replaced and the name resolved again.
            assert!(server.accepted() >= 2, "{}", server.accepted());
        }
    }
    // A script error that wraps nothing the limiter knows stays a usage error.
    let server = StandIn::start("ERR Error running script (call to f_1): @user_script:1: boom");
    let limiter = rt
        .block_on(RedisLimiter::connect_with(
            &server.url(),
            Quota::per_second(10),
            redis_support::patient(),
        ))
        .unwrap();
    let err = rt.block_on(limiter.try_check_key_n("k", 1)).unwrap_err();
    assert!(err.is_usage() && err.reply_code() == Some("ERR"), "{err:?}");
}

#[test]
fn redis_sentinel_names_the_primary_and_the_limiter_follows_a_failover() {
    let Some((primary, replica)) = pair("redis_sentinel_names_the_primary") else {
        return;
    };
    let Some(sentinel) = Sentinel::start("redis_sentinel", "svc", primary.port) else {
        return;
    };
    let rt = runtime();
    let sentinels = [sentinel.url()];
    let sentinels: Vec<&str> = sentinels.iter().map(String::as_str).collect();
    let limiter = rt
        .block_on(RedisLimiter::connect_sentinel(
            &sentinels,
            "svc",
            "redis://primary",
            Quota::per_hour(3),
            options().failure_policy(FailurePolicy::FailOpen),
        ))
        .unwrap();
    spend_and_sync(&rt, &limiter, &primary, &replica);
    sentinel.fail_over("svc");
    let deadline = Instant::now() + Duration::from_secs(10);
    while sentinel.primary_port("svc") != Some(replica.port) {
        assert!(Instant::now() < deadline, "the Sentinel never failed over");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The old primary comes back as a replica (the Sentinel would reconfigure it within its
    // 10 s INFO period; sooner here).
    let port = replica.port.to_string();
    let _: () = primary
        .query(redis::cmd("REPLICAOF").arg("127.0.0.1").arg(&port))
        .unwrap();
    // The limiter's connection still goes to the old primary, now a replica: its first spend
    // gets READONLY, and the next connection goes where the Sentinel says. A few calls get no
    // decision while the Sentinel still flags the new primary as it settles (the client skips
    // a primary so flagged); well under a second of them.
    follows(&rt, &limiter, &replica, 40);
}
