//! `maxmemory` and `maxmemory-policy` on a real `redis-server`, each policy in turn: what the
//! limiter reports at connect (a log line, `RedisStats::evicting_servers`,
//! `memory_settings`), and what the policy does to decisions once memory is full: a policy
//! that evicts loses live buckets (each a burst given away), `noeviction` refuses the writes
//! of admissions (`OOM`), which the failure policy answers and `RedisStats::oom` counts.

use crate::logs::{runtime, Logs};
use crate::redis_support::RedisServer;

use cellrate::Quota;
use cellrate_redis::{FailurePolicy, MemoryRisk, RedisLimiter, RedisOptions};
use redis::{Commands, Connection};
use std::time::Duration;
use tracing::Level;

const POLICIES: [&str; 8] = [
    "noeviction",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
];

fn options(policy: FailurePolicy) -> RedisOptions {
    RedisOptions::default()
        .failure_policy(policy)
        .deadline(Duration::from_millis(500))
}

fn used_memory(conn: &mut Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("memory").query(conn).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory in INFO memory")
}

/// Writes filler keys of 4 KiB (no expiry), each read (`STRLEN`: a read whose reply takes no
/// memory) 100 times so that it is used more than a bucket (for the LFU policies), until
/// `done` says so of the buckets' keys, or a write is refused for memory (`true` then, once
/// even a key of a few bytes is: memory is past the limit). Checks with `KEYS`, which touches
/// no key (an access would make the checked key recent for the LRU policies).
fn fill(conn: &mut Connection, done: impl Fn(&[String]) -> bool) -> bool {
    let oom = |replies: &[redis::Value]| {
        replies
            .iter()
            .any(|r| matches!(r, redis::Value::ServerError(e) if e.code() == "OOM"))
    };
    let value = "x".repeat(4096);
    for round in 0..2_000 {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for i in 0..20 {
            let key = format!("filler:{round}:{i}");
            pipe.cmd("SET").arg(&key).arg(&value);
            for _ in 0..100 {
                pipe.cmd("STRLEN").arg(&key).ignore();
            }
        }
        let refused = oom(&pipe.query::<Vec<redis::Value>>(conn).unwrap());
        // (Under volatile-*, writes are refused once the buckets, the only keys with an
        // expiry, are gone.)
        let keys: Vec<String> = conn.keys("cellrate:*").unwrap();
        if done(&keys) {
            return false;
        }
        if refused {
            for tiny in 0..100_000 {
                let mut pipe = redis::pipe();
                pipe.ignore_errors()
                    .cmd("SET")
                    .arg(format!("tiny:{tiny}"))
                    .arg(1);
                if oom(&pipe.query::<Vec<redis::Value>>(conn).unwrap()) {
                    return true;
                }
            }
            panic!("a small write never met the limit: {}", used_memory(conn));
        }
    }
    panic!("memory never filled, or the bucket never went");
}

#[test]
fn redis_each_maxmemory_policy_is_reported_and_does_what_the_docs_say() {
    let Some(server) = RedisServer::start("redis_each_maxmemory_policy") else {
        return;
    };
    let mut conn = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let quota = Quota::per_hour(3);
    for policy in POLICIES {
        let _: () = redis::cmd("FLUSHALL").query(&mut conn).unwrap();
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory-policy")
            .arg(policy)
            .arg("maxmemory")
            .arg(64 << 20)
            .query(&mut conn)
            .unwrap();
        let logs = Logs::default();
        let rt = runtime();
        let connect = |failure| {
            logs.capture(|| {
                rt.block_on(RedisLimiter::connect_with(
                    &server.url(),
                    quota,
                    options(failure),
                ))
            })
            .unwrap()
        };
        let limiter = connect(FailurePolicy::FailClosed);
        let open = connect(FailurePolicy::FailOpen);
        // Reported at connect, and read again on demand.
        let evicts = policy != "noeviction";
        let warned = logs.lines(Level::WARN, &format!("maxmemory-policy {policy}"));
        assert_eq!(
            warned.len(),
            2 * usize::from(evicts),
            "{policy}: {warned:?}"
        );
        assert_eq!(
            limiter.stats().evicting_servers,
            u64::from(evicts),
            "{policy}"
        );
        let settings = logs.capture(|| rt.block_on(limiter.memory_settings()));
        assert_eq!(settings.len(), 1);
        assert_eq!(settings[0].maxmemory, Some(64 << 20), "{settings:?}");
        assert_eq!(settings[0].policy.as_deref(), Some(policy), "{settings:?}");
        let risk = if evicts {
            MemoryRisk::Evicts
        } else {
            MemoryRisk::RefusesWrites
        };
        assert_eq!(settings[0].risk(), risk);
        // A bucket spent, then memory filled to the limit.
        let spend = |limiter: &RedisLimiter, key: &str| {
            logs.capture(|| {
                (0..4)
                    .map(|_| rt.block_on(limiter.check_key(key)).is_ok())
                    .filter(|&ok| ok)
                    .count()
            })
        };
        assert_eq!(spend(&limiter, "k"), 3, "{policy}");
        let limit = used_memory(&mut conn) + (256 << 10);
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(limit)
            .query(&mut conn)
            .unwrap();
        let refused = fill(&mut conn, |keys| keys.is_empty());
        if evicts {
            // The bucket was evicted: full again once there is room, its burst given again.
            assert!(!refused, "{policy}: a write refused before the bucket went");
            for i in 0..10 {
                let _: () = conn.del(format!("filler:0:{i}")).unwrap();
                let _: () = conn.del(format!("filler:1:{i}")).unwrap();
            }
            assert_eq!(spend(&limiter, "k"), 3, "{policy}: the bucket was not lost");
            assert_eq!(limiter.stats().oom, 0);
            continue;
        }
        // noeviction: the bucket stays, and its refusal (which writes nothing) is Redis's;
        // every admission needs a write, refused for memory and answered by the policy.
        assert!(refused, "memory never filled");
        assert_eq!(spend(&limiter, "k"), 0);
        assert_eq!(
            spend(&limiter, "new"),
            0,
            "FailClosed refuses what Redis cannot write"
        );
        assert_eq!(
            spend(&open, "new"),
            4,
            "FailOpen admits every call that would spend"
        );
        let stats = limiter.stats();
        assert_eq!(
            (stats.denied, stats.oom, stats.failed_closed),
            (5, 4, 4),
            "{stats:?}"
        );
        assert_eq!(open.stats().failed_open, 4);
        let err = rt.block_on(limiter.try_check_key_n("new", 1)).unwrap_err();
        assert_eq!(err.reply_code(), Some("OOM"), "{err:?}");
        assert!(!err.is_usage() && err.remedy().is_none(), "{err:?}");
        // Logged once per limiter, with what its policy does meanwhile.
        let warned = logs.lines(Level::WARN, "want of memory");
        assert_eq!(warned.len(), 2, "{warned:?}");
        assert!(
            warned[0].contains("refuses every call that would spend"),
            "{warned:?}"
        );
        assert!(
            warned[1].contains("admits every call that would spend"),
            "{warned:?}"
        );
    }
}

/// The settings are read with `CONFIG GET` where the ACL allows it, with `INFO memory` where
/// it does not, and are unknown where neither is allowed: never a failed connection.
#[test]
fn redis_memory_settings_are_read_where_the_acl_allows() {
    let Some(server) = RedisServer::start_with(
        "redis_memory_settings_are_read_where_the_acl_allows",
        &["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"],
    ) else {
        return;
    };
    server.acl_user("noconfig", &["~*", "+@all", "-config"]);
    server.acl_user("neither", &["~*", "+@all", "-config", "-info"]);
    let rt = runtime();
    for (user, risk) in [
        ("default", MemoryRisk::Evicts),
        ("noconfig", MemoryRisk::Evicts),
        ("neither", MemoryRisk::Unknown),
    ] {
        let url = if user == "default" {
            server.url()
        } else {
            server.url_as(user)
        };
        let options = options(FailurePolicy::FailOpen);
        let limiter = rt
            .block_on(RedisLimiter::connect_with(
                &url,
                Quota::per_second(5),
                options,
            ))
            .unwrap();
        let settings = rt.block_on(limiter.memory_settings());
        assert_eq!(settings[0].risk(), risk, "{user}: {settings:?}");
        let stats = limiter.stats();
        assert_eq!(
            stats.evicting_servers,
            u64::from(risk == MemoryRisk::Evicts)
        );
        assert!(rt.block_on(limiter.check_key("k")).is_ok(), "{user}");
    }
}
