//! A throwaway `redis-sentinel` on a loopback port, watching one primary with a quorum of one;
//! `None`, with a skip notice, where `redis-sentinel` is missing.

use crate::redis_support::{free_port, tool_available};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A Sentinel, killed when dropped.
pub struct Sentinel {
    child: Child,
    pub port: u16,
    dir: std::path::PathBuf,
}

impl Sentinel {
    /// A Sentinel monitoring `127.0.0.1:primary` as `service`, once it knows a replica of it.
    pub fn start(test: &str, service: &str, primary: u16) -> Option<Sentinel> {
        if !tool_available(test, "redis-sentinel", "redis-sentinel") {
            return None;
        }
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("cellrate-sentinel-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {dir}\n\
                 sentinel monitor {service} 127.0.0.1 {primary} 1\n\
                 sentinel down-after-milliseconds {service} 1000\n\
                 sentinel failover-timeout {service} 3000\n",
                dir = dir.display()
            ),
        )
        .unwrap();
        let child = Command::new("redis-sentinel")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-sentinel");
        let sentinel = Sentinel { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(15);
        while sentinel.replicas(service) == 0 {
            assert!(
                Instant::now() < deadline,
                "the sentinel never saw the replica"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(sentinel)
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn query<T: redis::FromRedisValue>(&self, cmd: &mut redis::Cmd) -> redis::RedisResult<T> {
        let client = redis::Client::open(self.url())?;
        let mut conn = client.get_connection_with_timeout(Duration::from_secs(2))?;
        cmd.query(&mut conn)
    }

    /// The port of the primary the Sentinel names for `service`.
    pub fn primary_port(&self, service: &str) -> Option<u16> {
        let cmd = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(service)
            .clone();
        let addr: Vec<String> = self.query(&mut cmd.clone()).ok()?;
        addr.get(1)?.parse().ok()
    }

    /// How many replicas of `service` the Sentinel knows.
    fn replicas(&self, service: &str) -> usize {
        self.query::<Vec<redis::Value>>(redis::cmd("SENTINEL").arg("REPLICAS").arg(service))
            .map_or(0, |r| r.len())
    }

    /// Starts a failover of `service` at once, without asking other Sentinels, as soon as the
    /// Sentinel has a replica it deems fit (it must have heard from it first).
    pub fn fail_over(&self, service: &str) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let started: redis::RedisResult<()> =
                self.query(redis::cmd("SENTINEL").arg("FAILOVER").arg(service));
            match started {
                Ok(()) => return,
                Err(e) if e.code() == Some("NOGOODSLAVE") && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => panic!("SENTINEL FAILOVER: {e}"),
            }
        }
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
