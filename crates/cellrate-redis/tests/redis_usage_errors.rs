//! Mistakes of the caller or the deployment are errors under every policy, never admissions:
//! a key holding something that is not a TAT (another type, or any string the scripts did not
//! write), a quota the script cannot hold, a user the ACL denies a command. The messages name
//! the key and the cause, the answers say they are faults, and the errors what mends them.

use crate::redis_support;

use cellrate::{Nanos, Quota};
use cellrate_redis::{Error, FailurePolicy, RedisLimiter, RedisOptions, Source};
use redis_support::{connected, runtime, RedisServer};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Stored values that are not what the scripts write (a TAT: a positive integer of
/// microseconds without sign, exponent or leading zero, at most 2^52 + 2^51; then, after a
/// give-back, `:` and the credit given back, a positive integer at most 2^51).
const CORRUPT: [&str; 20] = [
    "abc",
    "",
    "inf",
    "1e300",
    "nan",
    "-5",
    "0x10",
    "1.5",
    " 5",
    "0",
    "007",
    "1764115200000000x",
    "99999999999999999999",
    "6755399441055745",
    "5:0",
    "5:",
    ":5",
    "5:05",
    "5:1:2",
    "5:2251799813685249",
];

#[test]
fn redis_corrupt_values_are_errors_under_every_policy() {
    let Some(server) = RedisServer::start("redis_corrupt_values_are_errors") else {
        return;
    };
    let rt = runtime();
    let seen = Arc::new(Mutex::new(Vec::new()));
    for policy in [
        FailurePolicy::FailOpen,
        FailurePolicy::FailClosed,
        FailurePolicy::Local { servers: 1 },
    ] {
        let log = seen.clone();
        let options = redis_support::patient()
            .failure_policy(policy)
            .on_error(move |e| log.lock().unwrap().push(e.to_string()));
        let limiter = rt
            .block_on(RedisLimiter::connect_with(
                &server.url(),
                Quota::per_second(100),
                options,
            ))
            .unwrap();
        for (i, value) in CORRUPT.iter().enumerate() {
            let key = format!("bad{i}");
            let full = limiter.redis_key(&key);
            let _: () = server
                .query(redis::cmd("SET").arg(&full).arg(value))
                .unwrap();
            let err = rt.block_on(limiter.try_check_key_n(&key, 1)).unwrap_err();
            match &err {
                Error::CorruptValue { key: k } => assert_eq!(k.as_str(), full.as_str()),
                other => panic!("{value:?}: {other:?}"),
            }
            assert!(err.is_usage() && !err.outcome_unknown());
            assert!(err.to_string().contains(&full), "{err}");
            let at = Nanos::new(1_764_115_200_000_000_000);
            let err = rt.block_on(limiter.try_check_key_n_at(&key, 1, at));
            assert!(matches!(err, Err(Error::CorruptValue { .. })), "{err:?}");
            let err = rt.block_on(limiter.try_reserve_key_n(&key, 1));
            assert!(matches!(err, Err(Error::CorruptValue { .. })), "{err:?}");
            let answer = rt.block_on(limiter.check_key(&key));
            assert!(answer.unwrap_err().retry_after().is_none(), "{policy:?}");
            let batch = rt.block_on(limiter.check_many(&[(&key, 1), ("fine", 1)]));
            assert!(batch[0].is_err() && batch[1].is_ok(), "{policy:?}");
            // The corrupt key under the limiter's own quota: under another it names another
            // bucket.
            let limits = [
                (key.as_str(), limiter.quota()),
                ("fine", Quota::per_second(9)),
            ];
            assert!(rt.block_on(limiter.check_all_of_n(&limits, 1)).is_err());
            // Nothing was overwritten.
            let stored: String = server.query(redis::cmd("GET").arg(&full)).unwrap();
            assert_eq!(stored, *value);
        }
        let stats = limiter.stats();
        let n = CORRUPT.len() as u64;
        assert_eq!(stats.errors, 3 * n, "{policy:?}: {stats:?}");
        assert_eq!(stats.allowed, n, "{policy:?}: only the good key: {stats:?}");
        assert_eq!(stats.failed_open + stats.failed_closed, 0, "{stats:?}");
        assert_eq!(stats.local_allowed + stats.local_denied, 0, "{stats:?}");
    }
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.len(),
        3 * 3 * CORRUPT.len(),
        "the hook saw every refusal"
    );
    // The key is named; the value, perhaps another application's data, never is.
    assert!(seen[0].contains("cellrate:bad0"), "{}", seen[0]);
    for line in seen.iter() {
        assert!(
            !CORRUPT.iter().any(|v| line.contains(&format!("{v:?}"))),
            "{line}"
        );
    }
}

#[test]
fn redis_a_key_of_another_type_is_an_error() {
    let Some((server, rt, limiter)) = connected(
        "redis_a_key_of_another_type",
        Quota::per_second(10),
        redis_support::patient(),
    ) else {
        return;
    };
    let _: () = server
        .query(redis::cmd("LPUSH").arg("cellrate:list").arg(1))
        .unwrap();
    let err = rt.block_on(limiter.try_check_key_n("list", 1)).unwrap_err();
    assert!(
        matches!(&err, Error::WrongType(k) if k == "cellrate:list"),
        "{err:?}"
    );
    assert!(err.is_usage());
    assert!(err.to_string().contains("cellrate:list"), "{err}");
    // "list" under the limiter's own quota: under another it names another bucket.
    let limits = [
        ("ok", Quota::per_second(5)),
        ("list", Quota::per_second(10)),
    ];
    let err = rt
        .block_on(limiter.try_check_all_of_n(&limits, 1))
        .unwrap_err();
    assert!(
        matches!(&err, Error::WrongType(k) if k == "cellrate:list"),
        "{err:?}"
    );
    // Fail open does not admit it.
    assert!(rt.block_on(limiter.check_key("list")).is_err());
    assert!(rt.block_on(limiter.check_all_of_n(&limits, 1)).is_err());
    assert_eq!(limiter.stats().errors, 2);
    assert_eq!(limiter.stats().failed_open, 0);
}

#[test]
fn redis_a_quota_too_large_is_refused_under_fail_open() {
    let Some((_server, rt, limiter)) = connected(
        "redis_a_quota_too_large",
        Quota::per_second(10),
        redis_support::patient(),
    ) else {
        return;
    };
    let huge = Quota::with_period(Duration::from_secs(1)).with_burst(3_000_000_000);
    let answer = rt.block_on(limiter.check_key_n_with_quota("k", 1, &huge));
    assert!(
        answer.is_err(),
        "admitted under a quota the script cannot hold"
    );
    let limits = [("k", huge)];
    assert!(rt.block_on(limiter.check_all_of_n(&limits, 1)).is_err());
    let stats = limiter.stats();
    assert_eq!((stats.errors, stats.failed_open), (2, 0), "{stats:?}");
}

#[test]
fn redis_nothing_outside_the_prefix_is_touched_or_shown() {
    let Some(server) = RedisServer::start("redis_nothing_outside_the_prefix") else {
        return;
    };
    let rt = runtime();
    // An empty prefix would let a caller's key name any Redis key: refused at connect.
    let empty = redis_support::patient().key_prefix("");
    let err = rt
        .block_on(RedisLimiter::connect_with(
            &server.url(),
            Quota::per_second(1),
            empty.clone(),
        ))
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidOptions(_)) && err.is_usage(),
        "{err:?}"
    );
    let err = rt
        .block_on(async {
            RedisLimiter::connect_lazy(&server.url(), Quota::per_second(1), empty).map(|_| ())
        })
        .unwrap_err();
    assert!(matches!(err, Error::InvalidOptions(_)), "{err:?}");
    // Another application's data under a prefix shared by mistake: a token is refused, never
    // overwritten, and never repeated in the error (errors get logged).
    let options = redis_support::patient().key_prefix("session:");
    let limiter = rt
        .block_on(RedisLimiter::connect_with(
            &server.url(),
            Quota::per_second(1),
            options,
        ))
        .unwrap();
    let token = "tok-7f3a9c1e5b2d4f60a8e1";
    let _: () = server
        .query(redis::cmd("SET").arg("session:bob").arg(token))
        .unwrap();
    let err = rt.block_on(limiter.try_check_key_n("bob", 1)).unwrap_err();
    assert!(matches!(err, Error::CorruptValue { .. }), "{err:?}");
    assert!(!err.to_string().contains("7f3a9c"), "{err}");
    assert!(!format!("{err:?}").contains("7f3a9c"), "{err:?}");
    let stored: String = server.query(redis::cmd("GET").arg("session:bob")).unwrap();
    assert_eq!(stored, token);
}

/// A user the server's ACL denies EVALSHA: every call is refused as a fault, under every
/// policy, and the answer says who gave it and what mends it. An unreachable server, by
/// contrast, is the failure policy's to answer.
#[test]
fn redis_a_user_without_evalsha_is_a_fault_with_its_remedy() {
    let Some(mut server) = RedisServer::start("redis_a_user_without_evalsha") else {
        return;
    };
    server.acl_user("limiter", &["~*", "+@all", "-evalsha"]);
    let url = server.url_as("limiter");
    let rt = runtime();
    let quota = Quota::per_second(10);
    let options = |policy| {
        RedisOptions::default()
            .failure_policy(policy)
            .deadline(Duration::from_millis(200))
            .connection_timeout(Duration::from_millis(200))
    };
    let mut limiters = Vec::new();
    for policy in [
        FailurePolicy::FailOpen,
        FailurePolicy::FailClosed,
        FailurePolicy::Local { servers: 1 },
    ] {
        let limiter = rt
            .block_on(RedisLimiter::connect_with(&url, quota, options(policy)))
            .unwrap();
        let err = rt.block_on(limiter.try_check_key_n("k", 1)).unwrap_err();
        assert!(err.is_usage(), "{err:?}");
        assert!(err.remedy().unwrap().contains("ACL SETUSER"), "{err:?}");
        let answer = rt.block_on(limiter.check_key_n_answer("k", 1, &quota));
        assert!(answer.decision.is_err(), "{policy:?}");
        assert!(
            matches!(answer.source, Source::Fault(_)),
            "{:?}",
            answer.source
        );
        assert!(!answer.source.from_bucket());
        let booked = rt.block_on(limiter.reserve_key_n_answer("k", 1, &quota));
        assert!(
            matches!(booked.source, Source::Fault(_)),
            "{:?}",
            booked.source
        );
        let limits = [("{u}:a", quota), ("{u}:b", quota)];
        let joint = rt
            .block_on(limiter.reserve_all_of_n(&limits, 1))
            .unwrap_err();
        assert!(matches!(joint.source(), Source::Fault(_)), "{joint:?}");
        let stats = limiter.stats();
        assert_eq!(
            (stats.errors, stats.allowed),
            (3, 0),
            "{policy:?}: {stats:?}"
        );
        limiters.push(limiter);
    }
    // With the command granted, Redis decides; with the server gone, each policy answers.
    server.acl_user("limiter", &["+evalsha"]);
    let answer = rt.block_on(limiters[0].check_key_n_answer("k", 1, &quota));
    assert!(
        matches!(answer.source, Source::Redis),
        "{:?}",
        answer.source
    );
    assert!(answer.decision.is_ok() && answer.source.from_bucket());
    server.kill();
    let sources: Vec<Source> = limiters
        .iter()
        .map(|l| rt.block_on(l.check_key_n_answer("k", 1, &quota)).source)
        .collect();
    assert!(matches!(sources[0], Source::Policy(_)), "{sources:?}");
    assert!(matches!(sources[1], Source::Policy(_)), "{sources:?}");
    assert!(matches!(sources[2], Source::Local(_)), "{sources:?}");
    assert!(sources
        .iter()
        .all(|s| s.error().is_some_and(|e| e.remedy().is_none())));
}
