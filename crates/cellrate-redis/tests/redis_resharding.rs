//! Resharding a real 3-node Cluster under load: a slot migrated (`SETSLOT ... IMPORTING` and
//! `MIGRATING`, `MIGRATE`, `SETSLOT ... NODE`) while calls go on. `ASK` is followed with
//! `ASKING`, `TRYAGAIN` sent again within the deadline, and no admission passes the quota.

use crate::cluster;
use crate::redis_support;

use cellrate::Quota;
use cellrate_redis::{FailurePolicy, RedisLimiter, RedisOptions};
use cluster::RedisCluster;
use redis_support::runtime;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn connect(cluster: &RedisCluster, rt: &tokio::runtime::Runtime, quota: Quota) -> RedisLimiter {
    let urls = cluster.urls();
    let seeds: Vec<&str> = urls.iter().map(String::as_str).collect();
    let options = RedisOptions::default()
        .failure_policy(FailurePolicy::FailOpen)
        .deadline(Duration::from_millis(500))
        .probe_interval(Duration::from_millis(20));
    rt.block_on(RedisLimiter::connect_cluster(&seeds, quota, options))
        .unwrap()
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
