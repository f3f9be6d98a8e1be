//! A throwaway 3-node Redis Cluster (3 primaries, no replicas) on loopback ports, made with
//! `redis-cli --cluster create`; `None`, with a skip notice, where that is impossible.

use crate::redis_support::RedisServer;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Three `redis-server`s in one cluster, killed when dropped.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// A cluster whose nodes keep serving their slots when another node is down
    /// (`cluster-require-full-coverage no`).
    pub fn start(test: &str) -> Option<RedisCluster> {
        let args = [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            "1000",
            "--cluster-require-full-coverage",
            "no",
        ];
        let mut nodes = Vec::new();
        for _ in 0..3 {
            nodes.push(RedisServer::start_with(test, &args)?);
        }
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !created.is_ok_and(|s| s.success()) {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: `redis-cli --cluster create` failed or is missing \
                 (Debian: apt-get install redis-tools)"
            );
            return None;
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        for node in &nodes {
            while !node
                .query::<String>(redis::cmd("CLUSTER").arg("INFO"))
                .is_ok_and(|info| info.contains("cluster_state:ok"))
            {
                assert!(Instant::now() < deadline, "cluster never became ok");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Some(RedisCluster { nodes })
    }

    /// The `redis://` URLs of the nodes.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The node that serves `key` (a full Redis key).
    pub fn node_of(&self, key: &str) -> usize {
        let slot: i64 = self.nodes[0]
            .query(redis::cmd("CLUSTER").arg("KEYSLOT").arg(key))
            .unwrap();
        let slots: Vec<redis::Value> = self.nodes[0]
            .query(redis::cmd("CLUSTER").arg("SLOTS"))
            .unwrap();
        for range in slots {
            let redis::Value::Array(items) = range else {
                continue;
            };
            let (redis::Value::Int(start), redis::Value::Int(end)) = (&items[0], &items[1]) else {
                continue;
            };
            if (*start..=*end).contains(&slot) {
                let redis::Value::Array(primary) = &items[2] else {
                    break;
                };
                let redis::Value::Int(port) = primary[1] else {
                    break;
                };
                return self
                    .nodes
                    .iter()
                    .position(|n| i64::from(n.port) == port)
                    .expect("a node of this cluster");
            }
        }
        panic!("no node serves slot {slot}");
    }

    /// `INFO stats` field `name` of node `i`, as a number.
    pub fn stat(&self, i: usize, name: &str) -> u64 {
        let info: String = self.nodes[i]
            .query(redis::cmd("INFO").arg("stats"))
            .unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in INFO stats"))
    }
}
