//! Resharding a real 3-node Cluster under load: a slot migrated (`SETSLOT ... IMPORTING` and
//! `MIGRATING`, `MIGRATE`, `SETSLOT ... NODE`) while calls go on. `ASK` is followed with
//! `ASKING`, `TRYAGAIN` sent again within the deadline, and no admission passes the quota.
//! All-or-nothing calls on keys no node holds (new or idle clients) and batches sent to a node
//! that never loaded the script are decided by Redis for the whole migration.
//!
//! The quotas refill by the hour, so every count is exact whatever the machine's load: no
//! token comes back within a test.

use crate::cluster;
use crate::redis_support;

use cellrate::Quota;
use cellrate_redis::{FailurePolicy, RedisLimiter, RedisOptions};
use cluster::RedisCluster;
use redis_support::runtime;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn connect(cluster: &RedisCluster, rt: &tokio::runtime::Runtime, quota: Quota) -> RedisLimiter {
    cluster.limiter(rt, quota, options(FailurePolicy::FailOpen, "cellrate:"))
}

/// Options with `policy` and `prefix`, and a deadline far above a few loopback round trips, so
/// that a loaded machine does not turn a decision into the failure policy's answer.
fn options(policy: FailurePolicy, prefix: &str) -> RedisOptions {
    RedisOptions::default()
        .failure_policy(policy)
        .key_prefix(prefix)
        .deadline(Duration::from_millis(500))
        .probe_interval(Duration::from_millis(20))
}

#[test]
fn redis_cluster_a_slot_migrated_under_load_admits_no_more_than_the_quota() {
    let Some(cluster) = RedisCluster::start("redis_cluster_a_slot_migrated_under_load") else {
        return;
    };
    let cluster = Arc::new(cluster);
    let rt = runtime();
    let limiter = connect(&cluster, &rt, Quota::per_hour(3));
    let keys: Vec<String> = (0..20).map(|i| format!("{{m}}:{i}")).collect();
    let slot = cluster.slot_of("cellrate:{m}:0");
    let from = cluster.node_of("cellrate:{m}:0");
    let to = (from + 1) % 3;
    // Half the keys are full buckets; the others have never been seen (no key on the node).
    for key in &keys[..10] {
        for _ in 0..3 {
            assert!(rt.block_on(limiter.check_key(key)).is_ok());
        }
    }
    cluster.reset_stats();
    cluster.start_migration(slot, from, to);
    let migration = {
        let cluster = cluster.clone();
        std::thread::spawn(move || {
            let stored = cluster.keys_in(from, slot);
            let (first, rest) = stored.split_at(stored.len() / 2);
            std::thread::sleep(Duration::from_millis(200));
            cluster.migrate(first, from, to);
            std::thread::sleep(Duration::from_millis(300));
            cluster.migrate(rest, from, to);
            std::thread::sleep(Duration::from_millis(300));
            cluster.finish_migration(slot, to);
        })
    };
    let requests: Vec<(&str, u32)> = keys.iter().map(|k| (k.as_str(), 1)).collect();
    let started = Instant::now();
    let mut rounds = 0;
    while started.elapsed() < Duration::from_millis(1200) {
        for key in &keys {
            let _ = rt.block_on(limiter.check_key(key));
        }
        let _ = rt.block_on(limiter.check_many(&requests));
        rounds += 1;
    }
    migration.join().unwrap();
    let stats = limiter.stats();
    // The full buckets stayed full, the new ones got their 3 tokens each: 30 + 30.
    assert_eq!(stats.allowed, 60, "{rounds} rounds: {stats:?}");
    assert_eq!(stats.failed_open, 0, "calls without a decision: {stats:?}");
    // Every bucket now lives on the new node, whole.
    for key in &keys {
        let peek = rt.block_on(limiter.try_check_key_n(key, 0)).unwrap();
        assert_eq!(peek.unwrap().remaining(), 0, "{key}");
    }
    assert_eq!(cluster.keys_in(to, slot).len(), 20);
    // ASK says nothing of the map; the one MOVED after the migration does, once.
    let reads = cluster.calls("cluster|slots");
    assert!(reads <= 4, "the slot map was read {reads} times");
}

#[test]
fn redis_cluster_tryagain_is_sent_again_within_the_deadline() {
    let Some(cluster) = RedisCluster::start("redis_cluster_tryagain_is_sent_again") else {
        return;
    };
    let cluster = Arc::new(cluster);
    let rt = runtime();
    let quota = Quota::per_hour(10);
    let limiter = connect(&cluster, &rt, quota);
    let limits = [("{t}:a", quota), ("{t}:b", quota)];
    assert!(rt.block_on(limiter.check_all_of_n(&limits, 1)).is_ok());
    let slot = cluster.slot_of("cellrate:{t}:a");
    let from = cluster.node_of("cellrate:{t}:a");
    let to = (from + 1) % 3;
    cluster.start_migration(slot, from, to);
    // One key moved, the other not: the source answers a script on both TRYAGAIN.
    cluster.migrate(&["cellrate:{t}:a".to_owned()], from, to);
    let finish = {
        let cluster = cluster.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            cluster.migrate(&["cellrate:{t}:b".to_owned()], from, to);
            cluster.finish_migration(slot, to);
        })
    };
    let answer = rt.block_on(limiter.try_check_all_of_n(&limits, 1));
    finish.join().unwrap();
    let allowed = answer
        .expect("a decision once the keys are together")
        .unwrap();
    assert_eq!(allowed.remaining(), 8);
}

/// A new client's per-IP bucket and the global one, spent together (`check_all_of_n`) while
/// their slot migrates: no node holds either key, so the source answers `ASK` and the node
/// importing the slot `TRYAGAIN` (a script of several keys meets keys it does not hold). The
/// answers are still Redis's, exact (absent keys are full buckets, or empty ones at first
/// sight for buckets that start empty), under either failure policy, and none is the policy's.
/// A key the source still holds is never written over on the importing node: its calls wait
/// for it to be migrated.
#[test]
fn redis_cluster_all_or_nothing_on_absent_keys_is_decided_through_a_migration() {
    let Some(cluster) = RedisCluster::start("redis_cluster_all_or_nothing_through_a_migration")
    else {
        return;
    };
    let rt = runtime();
    let per_ip = Quota::per_hour(2);
    let global = Quota::per_hour(5);
    let prefixes = ["open:", "closed:"];
    let limiters: Vec<RedisLimiter> = [FailurePolicy::FailOpen, FailurePolicy::FailClosed]
        .into_iter()
        .zip(prefixes)
        .map(|(policy, prefix)| cluster.limiter(&rt, per_ip, options(policy, prefix)))
        .collect();
    let empty = options(FailurePolicy::FailOpen, "empty:").start_empty(true);
    let starts_empty = cluster.limiter(&rt, per_ip, empty);
    let slot = cluster.slot_of("open:{app}:global");
    let from = cluster.node_of("open:{app}:global");
    let to = (from + 1) % 3;
    // A client seen before the migration: its bucket is on the source, one token spent.
    let seen = [("{app}:seen", per_ip)];
    for limiter in &limiters {
        let answer = rt.block_on(limiter.try_check_all_of_n(&seen, 1));
        assert!(answer.unwrap().is_ok());
    }
    cluster.start_migration(slot, from, to);
    for limiter in &limiters {
        // Four new clients, four requests each: 2 + 2 + 1 admitted, then the global bucket is
        // empty.
        let mut admitted = Vec::new();
        for ip in 0..4 {
            let key = format!("{{app}}:ip{ip}");
            let limits = [(key.as_str(), per_ip), ("{app}:global", global)];
            let mut n = 0;
            for _ in 0..4 {
                n += usize::from(rt.block_on(limiter.check_all_of_n(&limits, 1)).is_ok());
            }
            admitted.push(n);
        }
        assert_eq!(admitted, [2, 2, 1, 0], "{:?}", limiter.stats());
    }
    // Buckets that start empty: the first sight of each is an empty bucket, refused until a
    // token is earned (half an hour), and remembered.
    let limits = [("{app}:ip0", per_ip), ("{app}:global", global)];
    for _ in 0..2 {
        let refused = rt.block_on(starts_empty.check_all_of_n(&limits, 1));
        let wait = refused.unwrap_err().retry_after().expect("a wait");
        assert!(wait > Duration::from_secs(29 * 60), "{wait:?}");
    }
    assert_eq!(
        cluster
            .keys_in(to, slot)
            .iter()
            .filter(|k| k.starts_with("empty:"))
            .count(),
        2
    );
    // The client seen before, with a new bucket beside it: its key is still on the source, the
    // other on neither node, so both nodes answer TRYAGAIN until the deadline, and nothing is
    // written on the importing node; once the key is migrated, the call is decided.
    let limits = [("{app}:seen", per_ip), ("{app}:new", per_ip)];
    for limiter in &limiters {
        let err = rt
            .block_on(limiter.try_check_all_of_n(&limits, 1))
            .unwrap_err();
        assert_eq!(err.reply_code(), Some("TRYAGAIN"), "{err:?}");
    }
    let written = cluster.keys_in(to, slot);
    assert!(
        !written
            .iter()
            .any(|k| k.ends_with(":seen") || k.ends_with(":new")),
        "{written:?}"
    );
    let seen_keys = prefixes.map(|p| format!("{p}{{app}}:seen"));
    cluster.migrate(&seen_keys, from, to);
    for limiter in &limiters {
        let answer = rt.block_on(limiter.try_check_all_of_n(&limits, 1));
        let allowed = answer.expect("a decision").unwrap();
        assert_eq!(allowed.remaining(), 0, "the seen bucket had one token left");
    }
    cluster.finish_migration(slot, to);
    for limiter in &limiters {
        let limits = [("{app}:ip3", per_ip), ("{app}:global", global)];
        assert!(rt.block_on(limiter.check_all_of_n(&limits, 1)).is_err());
        // (The `try_` calls are not counted.)
        let stats = limiter.stats();
        assert_eq!((stats.allowed, stats.denied), (5, 11 + 1), "{stats:?}");
        assert_eq!(
            (stats.failed_open, stats.failed_closed, stats.errors),
            (0, 0, 0),
            "answers without a decision: {stats:?}"
        );
    }
    let stats = starts_empty.stats();
    assert_eq!((stats.denied, stats.failed_open), (2, 0), "{stats:?}");
    // The buckets live on the new owner, spent as the answers said.
    for (limiter, prefix) in limiters.iter().zip(prefixes) {
        for (key, quota) in [("{app}:global", global), ("{app}:ip0", per_ip)] {
            assert_eq!(cluster.node_of(&format!("{prefix}{key}")), to);
            let peek = rt.block_on(limiter.try_check_key_n_with_quota(key, 0, &quota));
            assert_eq!(peek.unwrap().unwrap().remaining(), 0, "{prefix}{key}");
        }
    }
}

/// Batches (`check_many`) whose keys are in a slot migrating to a node that never loaded the
/// script (as a master just added to the Cluster): the calls sent there by `ASK` meet
/// `NOSCRIPT`, and are decided once the script is loaded there, never by the failure policy.
#[test]
fn redis_cluster_batches_sent_by_ask_to_a_node_without_the_script_are_decided() {
    let Some(cluster) = RedisCluster::start("redis_cluster_batches_sent_by_ask") else {
        return;
    };
    let rt = runtime();
    let limiter = connect(&cluster, &rt, Quota::per_hour(3));
    let keys: Vec<String> = (0..10).map(|i| format!("{{b}}:{i}")).collect();
    let slot = cluster.slot_of("cellrate:{b}:0");
    let from = cluster.node_of("cellrate:{b}:0");
    let to = (from + 1) % 3;
    // Two keys seen before the migration: their buckets stay on the source.
    let seen: Vec<(&str, u32)> = keys[..2].iter().map(|k| (k.as_str(), 1)).collect();
    assert!(rt
        .block_on(limiter.check_many(&seen))
        .iter()
        .all(Result::is_ok));
    let _: () = cluster.nodes[to]
        .query(redis::cmd("SCRIPT").arg("FLUSH"))
        .unwrap();
    cluster.start_migration(slot, from, to);
    let requests: Vec<(&str, u32)> = keys.iter().map(|k| (k.as_str(), 1)).collect();
    let mut admitted = vec![0; keys.len()];
    for _ in 0..4 {
        let answers = rt.block_on(limiter.check_many(&requests));
        for (n, answer) in admitted.iter_mut().zip(&answers) {
            *n += usize::from(answer.is_ok());
        }
    }
    // The seen keys had 2 tokens left, the new ones 3.
    let mut want = vec![3; keys.len()];
    want[..2].fill(2);
    assert_eq!(admitted, want, "{:?}", limiter.stats());
    let stats = limiter.stats();
    assert_eq!((stats.failed_open, stats.errors), (0, 0), "{stats:?}");
    assert_eq!(stats.allowed, 2 + 28, "{stats:?}");
    assert_eq!(
        cluster.keys_in(to, slot).len(),
        8,
        "the new buckets live on the new node"
    );
}
