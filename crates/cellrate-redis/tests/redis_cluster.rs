//! A real 3-node Redis Cluster on loopback: batches grouped by node, a dead node's keys fail
//! with an error naming it while the others are decided, keys of different slots refused
//! under every policy.

use crate::cluster;
use crate::redis_support;

use cellrate::Quota;
use cellrate_redis::{Error, FailurePolicy, RedisLimiter, RedisOptions};
use cluster::RedisCluster;
use redis_support::runtime;
use std::time::{Duration, Instant};

fn connect(cluster: &RedisCluster, rt: &tokio::runtime::Runtime) -> RedisLimiter {
    let options = RedisOptions::default()
        .deadline(Duration::from_millis(200))
        .probe_interval(Duration::from_millis(50));
    cluster.limiter(rt, Quota::per_hour(1).with_burst(100), options)
}

#[test]
fn redis_cluster_batches_go_one_pipeline_per_node() {
    let Some(cluster) = RedisCluster::start("redis_cluster_batches_go_one_pipeline_per_node")
    else {
        return;
    };
    let rt = runtime();
    let limiter = connect(&cluster, &rt);
    let keys: Vec<String> = (0..64).map(|i| format!("k{i}")).collect();
    let requests: Vec<(&str, u32)> = keys.iter().map(|k| (k.as_str(), 1)).collect();
    rt.block_on(limiter.check_many(&requests)); // loads the script on every node
    let reads =
        |c: &RedisCluster| -> u64 { (0..3).map(|i| c.stat(i, "total_reads_processed")).sum() };
    let before = reads(&cluster);
    for _ in 0..20 {
        let answers = rt.block_on(limiter.check_many(&requests));
        assert!(answers.iter().all(|a| a.is_ok()));
    }
    // One pipeline per node and batch is about 3 reads per batch (and a few for INFO).
    // Grouping by slot sends 64 one-call pipelines per batch, which the client coalesces
    // into about 12 reads.
    let per_batch = (reads(&cluster) - before) as f64 / 20.0;
    assert!(
        per_batch < 6.0,
        "{per_batch} reads per batch of 64 keys on 3 nodes"
    );
    assert_eq!(limiter.stats().allowed, 21 * 64);
    // Every node got its share.
    let nodes: std::collections::HashSet<usize> = keys
        .iter()
        .map(|k| cluster.node_of(&limiter.redis_key(k)))
        .collect();
    assert_eq!(nodes.len(), 3);
}

#[test]
fn redis_cluster_a_dead_nodes_keys_fail_clearly_and_the_others_are_decided() {
    let Some(mut cluster) = RedisCluster::start("redis_cluster_a_dead_node") else {
        return;
    };
    let rt = runtime();
    let limiter = connect(&cluster, &rt);
    let keys: Vec<String> = (0..30).map(|i| format!("d{i}")).collect();
    let node_of: Vec<usize> = keys
        .iter()
        .map(|k| cluster.node_of(&limiter.redis_key(k)))
        .collect();
    let requests: Vec<(&str, u32)> = keys.iter().map(|k| (k.as_str(), 1)).collect();
    assert!(rt
        .block_on(limiter.try_check_many(&requests))
        .unwrap()
        .iter()
        .all(|a| a.is_ok()));

    let dead = node_of[0];
    let dead_addr = format!("127.0.0.1:{}", cluster.nodes[dead].port);
    cluster.nodes[dead].kill();
    std::thread::sleep(Duration::from_millis(50));
    let started = Instant::now();
    let mut rounds = 0;
    loop {
        let answers = rt.block_on(limiter.try_check_many(&requests)).unwrap();
        rounds += 1;
        for (answer, &node) in answers.iter().zip(&node_of) {
            if node == dead {
                let err = answer.as_ref().unwrap_err();
                assert!(err.to_string().contains(&dead_addr), "{err}");
                assert!(!err.is_usage(), "{err:?}");
            } else {
                assert!(answer.is_ok(), "a live node's key failed: {answer:?}");
            }
        }
        // After the first round the dead node is known: its keys fail at once, unsent.
        if rounds == 2 {
            for (answer, &node) in answers.iter().zip(&node_of) {
                if node == dead {
                    let err = answer.as_ref().unwrap_err();
                    assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
                    assert!(!err.outcome_unknown());
                }
            }
            break;
        }
    }
    // Two rounds: the first meets the dead node (a refused connection, at once), the second
    // fails its keys unsent; a second is far more than that takes on a loaded machine.
    assert!(started.elapsed() < Duration::from_secs(1));
    let single = rt
        .block_on(limiter.try_check_key_n(&keys[0], 1))
        .unwrap_err();
    assert!(single.to_string().contains(&dead_addr), "{single}");
}

#[test]
fn redis_cluster_cross_slot_all_of_is_refused_under_every_policy() {
    let Some(cluster) = RedisCluster::start("redis_cluster_cross_slot") else {
        return;
    };
    let rt = runtime();
    let q = Quota::per_hour(3);
    for policy in [FailurePolicy::FailOpen, FailurePolicy::Local { servers: 1 }] {
        let options = RedisOptions::default().failure_policy(policy);
        let limiter = cluster.limiter(&rt, q, options);
        let cross = [("x1", q), ("x2", q)];
        let err = rt
            .block_on(limiter.try_check_all_of_n(&cross, 1))
            .unwrap_err();
        assert!(
            matches!(&err, Error::CrossSlot(keys) if keys.len() == 2),
            "{err:?}"
        );
        assert!(err.is_usage());
        assert!(err.to_string().contains("cellrate:x1"), "{err}");
        assert!(rt.block_on(limiter.check_all_of_n(&cross, 1)).is_err());
        let same = [("{t}:user", q), ("{t}:org", q)];
        assert!(rt.block_on(limiter.check_all_of_n(&same, 1)).is_ok());
        let stats = limiter.stats();
        assert_eq!(
            (stats.errors, stats.allowed),
            (1, 1),
            "{policy:?}: {stats:?}"
        );
    }
}
