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
        RedisCluster::start_with(test, |_| Vec::new(), &[], |n| n.port)
    }

    /// [`RedisCluster::start`] with extra arguments for node `i` (`extra(i)`), extra
    /// `redis-cli` arguments, and the port of a node `redis-cli` and the Cluster use.
    pub fn start_with(
        test: &str,
        extra: impl Fn(usize) -> Vec<String>,
        cli: &[&str],
        port: impl Fn(&RedisServer) -> u16,
    ) -> Option<RedisCluster> {
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
        for i in 0..3 {
            let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            all.extend(extra(i));
            let all: Vec<&str> = all.iter().map(String::as_str).collect();
            nodes.push(RedisServer::start_with(test, &all)?);
        }
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", port(n)))
            .collect();
        let created = Command::new("redis-cli")
            .args(cli)
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

    /// A limiter connected to the Cluster through every node, on `rt`.
    pub fn limiter(
        &self,
        rt: &tokio::runtime::Runtime,
        quota: cellrate::Quota,
        options: cellrate_redis::RedisOptions,
    ) -> cellrate_redis::RedisLimiter {
        let urls = self.urls();
        let seeds: Vec<&str> = urls.iter().map(String::as_str).collect();
        let connect = cellrate_redis::RedisLimiter::connect_cluster(&seeds, quota, options);
        rt.block_on(connect).expect("connect to the test's Cluster")
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

    /// Node `i`'s cluster id.
    pub fn id(&self, i: usize) -> String {
        self.nodes[i]
            .query(redis::cmd("CLUSTER").arg("MYID"))
            .unwrap()
    }

    /// The slot of `key` (a full Redis key).
    pub fn slot_of(&self, key: &str) -> u16 {
        self.nodes[0]
            .query(redis::cmd("CLUSTER").arg("KEYSLOT").arg(key))
            .unwrap()
    }

    /// Starts moving `slot` from node `from` to node `to`: importing there, migrating here.
    pub fn start_migration(&self, slot: u16, from: usize, to: usize) {
        let (from_id, to_id) = (self.id(from), self.id(to));
        let _: () = self.nodes[to]
            .query(
                redis::cmd("CLUSTER")
                    .arg("SETSLOT")
                    .arg(slot)
                    .arg("IMPORTING")
                    .arg(from_id),
            )
            .unwrap();
        let _: () = self.nodes[from]
            .query(
                redis::cmd("CLUSTER")
                    .arg("SETSLOT")
                    .arg(slot)
                    .arg("MIGRATING")
                    .arg(to_id),
            )
            .unwrap();
    }

    /// Moves `keys` (full Redis keys, of a slot being migrated) from node `from` to `to`.
    pub fn migrate(&self, keys: &[String], from: usize, to: usize) {
        if keys.is_empty() {
            return;
        }
        let port = self.nodes[to].port;
        let mut cmd = redis::cmd("MIGRATE");
        cmd.arg("127.0.0.1")
            .arg(port)
            .arg("")
            .arg(0)
            .arg(5000)
            .arg("KEYS");
        for key in keys {
            cmd.arg(key);
        }
        let _: () = self.nodes[from].query(&mut cmd).unwrap();
    }

    /// The keys node `i` holds in `slot`.
    pub fn keys_in(&self, i: usize, slot: u16) -> Vec<String> {
        self.nodes[i]
            .query(
                redis::cmd("CLUSTER")
                    .arg("GETKEYSINSLOT")
                    .arg(slot)
                    .arg(1000),
            )
            .unwrap()
    }

    /// Ends a migration: every node learns that node `to` serves `slot`.
    pub fn finish_migration(&self, slot: u16, to: usize) {
        let to_id = self.id(to);
        for node in &self.nodes {
            let _: () = node
                .query(
                    redis::cmd("CLUSTER")
                        .arg("SETSLOT")
                        .arg(slot)
                        .arg("NODE")
                        .arg(&to_id),
                )
                .unwrap();
        }
    }

    /// `calls` of command `command` (such as `cluster|slots`) on every node since the last
    /// `CONFIG RESETSTAT`.
    pub fn calls(&self, command: &str) -> u64 {
        self.nodes
            .iter()
            .map(|n| {
                let calls = n.commandstat(command, "calls");
                if calls.is_nan() {
                    0
                } else {
                    calls as u64
                }
            })
            .sum()
    }

    /// `CONFIG RESETSTAT` on every node.
    pub fn reset_stats(&self) {
        for node in &self.nodes {
            let _: () = node.query(redis::cmd("CONFIG").arg("RESETSTAT")).unwrap();
        }
    }
}
