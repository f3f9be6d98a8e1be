//! What the Redis backend stores: expiry, nothing written for denials and peeks, NOSCRIPT
//! recovery, key prefixes and hash tags, batches, per-call quotas, a one-node Cluster.

use crate::redis_support;

use cellrate::{Nanos, Quota};
use cellrate_redis::RedisLimiter;
use redis_support::{connected, runtime, RedisServer};
use std::time::Duration;

fn pttl(server: &RedisServer, key: &str) -> i64 {
    server.query(redis::cmd("PTTL").arg(key)).unwrap()
}

fn get(server: &RedisServer, key: &str) -> Option<String> {
    server.query(redis::cmd("GET").arg(key)).unwrap()
}

#[test]
fn redis_keys_expire_when_full_and_denials_and_peeks_write_nothing() {
    // A token every 300 ms: the steps below, a few round trips each, come well within one
    // even where a loaded machine stalls them.
    let quota = Quota::with_period(Duration::from_millis(300)).with_burst(2);
    let Some((server, rt, limiter)) = connected(
        "redis_keys_expire_when_full",
        quota,
        redis_support::patient(),
    ) else {
        return;
    };
    let key = "cellrate:exp";

    // A peek of a missing key writes nothing.
    let peek = rt
        .block_on(limiter.try_check_key_n(key_name(key), 0))
        .unwrap();
    assert_eq!(peek.unwrap().remaining(), 2);
    assert_eq!(get(&server, key), None);

    // One token spent: the key lives exactly until the bucket is full again (300 ms).
    let allowed = rt.block_on(limiter.check_key(key_name(key))).unwrap();
    assert_eq!(allowed.remaining(), 1);
    let ttl = pttl(&server, key);
    assert!((1..=300).contains(&ttl), "PTTL {ttl} ms for a 300 ms debt");
    let tat = get(&server, key).expect("TAT written");
    assert!(tat.parse::<u64>().is_ok(), "TAT {tat:?} is an integer");

    rt.block_on(limiter.check_key(key_name(key))).unwrap();
    let denied = rt.block_on(limiter.check_key(key_name(key))).unwrap_err();
    assert_eq!(denied.remaining(), 0);
    // Denials (including cost > burst) and peeks change nothing.
    let before = get(&server, key);
    rt.block_on(limiter.check_key_n(key_name(key), 2))
        .unwrap_err();
    rt.block_on(limiter.check_key_n(key_name(key), 3))
        .unwrap_err(); // cost > burst
    rt.block_on(limiter.check_key_n(key_name(key), 0)).unwrap(); // peek
    assert_eq!(get(&server, key), before);
    assert!(pttl(&server, key) <= 600);

    // Once the bucket is full again the key is gone, and a missing key is a full bucket.
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(
        pttl(&server, key),
        -2,
        "key still there after its bucket is full"
    );
    let again = rt.block_on(limiter.check_key(key_name(key))).unwrap();
    assert_eq!(again.remaining(), 1);
}

/// The limiter's key for a full Redis key under the default prefix `cellrate:`.
fn key_name(full: &str) -> &str {
    full.strip_prefix("cellrate:").unwrap()
}

#[test]
fn redis_script_flush_is_recovered_transparently() {
    let Some((server, rt, limiter)) = connected(
        "redis_script_flush_is_recovered",
        Quota::per_hour(10),
        redis_support::patient(),
    ) else {
        return;
    };
    assert_eq!(rt.block_on(limiter.check_key("a")).unwrap().remaining(), 9);
    let _: () = server.query(redis::cmd("SCRIPT").arg("FLUSH")).unwrap();
    assert_eq!(rt.block_on(limiter.check_key("a")).unwrap().remaining(), 8);
    let _: () = server.query(redis::cmd("SCRIPT").arg("FLUSH")).unwrap();
    let many = rt.block_on(limiter.check_many(&[("a", 1), ("b", 2), ("a", 1)]));
    let remaining: Vec<u32> = many.iter().map(|r| r.unwrap().remaining()).collect();
    assert_eq!(remaining, [7, 8, 6]);
    let booking = rt.block_on(limiter.reserve_key_n("a", 2)).unwrap();
    assert_eq!(booking.allowed().remaining(), 4);
    let _: () = server.query(redis::cmd("SCRIPT").arg("FLUSH")).unwrap();
    rt.block_on(booking.cancel()).unwrap();
    assert_eq!(
        rt.block_on(limiter.check_key_n("a", 0))
            .unwrap()
            .remaining(),
        6
    );
    assert_eq!(limiter.stats().allowed, 6);
    assert_eq!(limiter.stats().peeks, 1);
}

#[test]
fn redis_prefix_hash_tags_batches_and_per_call_quota() {
    let options = redis_support::patient().key_prefix("api:");
    let Some((server, rt, limiter)) = connected(
        "redis_prefix_hash_tags_batches",
        Quota::per_hour(5),
        options,
    ) else {
        return;
    };
    assert_eq!(limiter.redis_key("{user1}:read"), "api:{user1}:read");
    let t = Nanos::new(1_764_115_200_000_000_000);
    let answers = rt
        .block_on(limiter.try_check_many_at(
            &[
                ("{user1}:read", 1),
                ("{user1}:write", 5),
                ("{user1}:read", 6),
            ],
            t,
        ))
        .unwrap();
    assert_eq!(answers[0].as_ref().unwrap().unwrap().remaining(), 4);
    assert_eq!(answers[1].as_ref().unwrap().unwrap().remaining(), 0);
    assert_eq!(
        answers[2].as_ref().unwrap().unwrap_err().retry_after(),
        None
    );
    assert!(get(&server, "api:{user1}:read").is_some());
    assert!(get(&server, "api:{user1}:write").is_some());

    // A time off the microsecond grid is rounded down: 999 ns later is the same instant.
    let late = Nanos::new(t.as_u64() + 999);
    let first = rt
        .block_on(limiter.try_check_key_n_at("grid", 1, t))
        .unwrap();
    let second = rt
        .block_on(limiter.try_check_key_n_at("grid", 1, late))
        .unwrap();
    assert_eq!(first.unwrap().reset_after(), Duration::from_secs(720));
    assert_eq!(second.unwrap().reset_after(), Duration::from_secs(1440));

    // One bad key in a batch fails alone.
    let _: () = server
        .query(redis::cmd("LPUSH").arg("api:list").arg(1))
        .unwrap();
    let answers = rt
        .block_on(limiter.try_check_many(&[("list", 1), ("ok", 1)]))
        .unwrap();
    assert!(answers[0].is_err());
    assert_eq!(answers[1].as_ref().unwrap().unwrap().remaining(), 4);

    // A per-call quota names another bucket: the key's under a bigger burst starts full, and
    // its own bucket, spent by the batch, is left as it was.
    let bigger = Quota::per_hour(5).with_burst(10);
    let ok = rt
        .block_on(limiter.try_check_key_n_with_quota_at("{user1}:write", 5, &bigger, t))
        .unwrap()
        .unwrap();
    assert_eq!(ok.remaining(), 5);
    assert!(get(&server, "api:{user1}:write%q720000000x10%").is_some());
    let denied = rt
        .block_on(limiter.try_check_key_n_at("{user1}:write", 1, t))
        .unwrap()
        .unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_secs(720)));
    let again = rt
        .block_on(limiter.try_check_key_n_with_quota_at("{user1}:write", 6, &bigger, t))
        .unwrap()
        .unwrap_err();
    assert_eq!(again.retry_after(), Some(Duration::from_secs(720)));
}

#[test]
fn redis_cluster_connection_on_a_one_node_cluster() {
    let Some(server) = RedisServer::start_one_node_cluster("redis_cluster_connection") else {
        return;
    };
    let rt = runtime();
    let url = server.url();
    let limiter = rt
        .block_on(RedisLimiter::connect_cluster(
            &[&url],
            Quota::per_hour(3),
            redis_support::patient(),
        ))
        .unwrap();
    assert_eq!(
        rt.block_on(limiter.check_key_n("{u}:a", 2))
            .unwrap()
            .remaining(),
        1
    );
    let keys: Vec<String> = (0..20).map(|i| format!("k{i}")).collect();
    let requests: Vec<(&str, u32)> = keys
        .iter()
        .map(|k| (k.as_str(), 1))
        .chain([("{u}:a", 1), ("{u}:b", 3)])
        .collect();
    let answers = rt.block_on(limiter.check_many(&requests));
    assert!(answers[..20].iter().all(|a| a.unwrap().remaining() == 2));
    assert_eq!(answers[20].unwrap().remaining(), 0);
    assert_eq!(answers[21].unwrap().remaining(), 0);
    assert!(rt.block_on(limiter.check_key("{u}:a")).is_err());
    let _: () = server.query(redis::cmd("SCRIPT").arg("FLUSH")).unwrap();
    assert!(rt.block_on(limiter.check_key("k3")).is_ok());
    // All-or-nothing across keys of one slot; keys of different slots are refused by the
    // server, and nothing is spent.
    let q = Quota::per_hour(3);
    let both = [("{v}:user", q), ("{v}:org", Quota::per_hour(1))];
    assert_eq!(
        rt.block_on(limiter.check_all_of_n(&both, 1))
            .unwrap()
            .remaining(),
        0
    );
    assert!(rt.block_on(limiter.check_all_of_n(&both, 1)).is_err());
    let cross = [("x1", q), ("x2", q)];
    assert!(rt.block_on(limiter.try_check_all_of_n(&cross, 1)).is_err());
    assert_eq!(
        rt.block_on(limiter.check_key_n("x1", 0))
            .unwrap()
            .remaining(),
        3
    );
    let slot = |k: &str| -> i64 {
        server
            .query(
                redis::cmd("CLUSTER")
                    .arg("KEYSLOT")
                    .arg(limiter.redis_key(k)),
            )
            .unwrap()
    };
    assert_eq!(slot("{u}:a"), slot("{u}:b"));
    assert_eq!(limiter.stats().failed_open, 0);
    assert_eq!(limiter.stats().denied, 2);
}

#[test]
fn redis_long_keys_get_bounded_names_and_keep_their_tag() {
    let Some((server, rt, limiter)) = connected(
        "redis_long_keys_get_bounded_names",
        Quota::per_hour(2),
        redis_support::patient(),
    ) else {
        return;
    };
    let long = format!("{{org7}}:{}", "u".repeat(10_000));
    assert!(rt.block_on(limiter.check_key(&long)).is_ok());
    assert!(rt.block_on(limiter.check_key(&long)).is_ok());
    assert!(
        rt.block_on(limiter.check_key(&long)).is_err(),
        "one bucket for one key"
    );
    let names: Vec<String> = server.query(redis::cmd("KEYS").arg("cellrate:*")).unwrap();
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(
        names[0].starts_with("cellrate:{org7}#") && names[0].len() < 64,
        "{names:?}"
    );
    assert_eq!(names[0], limiter.redis_key(&long));
}

#[test]
fn redis_a_short_key_spelled_like_a_digested_name_has_a_bucket_of_its_own() {
    let Some((server, rt, limiter)) = connected(
        "redis_a_short_key_spelled_like_a_digested_name",
        Quota::per_hour(1),
        redis_support::patient(),
    ) else {
        return;
    };
    for long in [format!("{{org7}}:{}", "u".repeat(1000)), "v".repeat(1000)] {
        assert!(rt.block_on(limiter.check_key(&long)).is_ok());
        assert!(rt.block_on(limiter.check_key(&long)).is_err());
        // A key that reads as the long key's name (a client who learnt the long key can
        // spell it) must not land on the long key's bucket.
        let name = limiter.redis_key(&long);
        let lookalike = name.strip_prefix("cellrate:").unwrap();
        assert!(lookalike.len() < 64, "{lookalike}");
        assert_ne!(limiter.redis_key(lookalike), name);
        assert!(
            rt.block_on(limiter.check_key(lookalike)).is_ok(),
            "{lookalike} spent in {long:.20}'s bucket"
        );
    }
    // Short keys keep their names, `#` and all.
    for short in ["user:42", "{acme}:user#7", "#1", "a#0123456789abcdef"] {
        assert_eq!(limiter.redis_key(short), format!("cellrate:{short}"));
    }
    let names: Vec<String> = server.query(redis::cmd("KEYS").arg("cellrate:*")).unwrap();
    assert_eq!(names.len(), 4, "{names:?}");
}
