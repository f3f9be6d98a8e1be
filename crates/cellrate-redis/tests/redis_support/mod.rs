//! A throwaway `redis-server` for the tests: started from PATH on a free loopback port, with no
//! persistence, killed when dropped.
#![allow(dead_code)] // each test file uses a different part of it

// `cluster.rs` (a 3-node Cluster), `proxy.rs` (the fault proxy), `sentinel.rs`, `stand_in.rs`
// (a stand-in for an older server) and `tls.rs` (certificates made with openssl) sit beside
// this file; tests/integration.rs includes each once with `#[path]`, so that the redis bench,
// which includes this file too, needs none of them (nor the proxy's libc).

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `redis-server` owned by one test.
pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
    dir: PathBuf,
    extra: Vec<String>,
}

/// `true` if `redis-server` can be started; otherwise prints why the test is skipped.
pub fn redis_available(test: &str) -> bool {
    tool_available(test, "redis-server", "redis-server redis-tools")
}

/// `true` if `program --version` runs; otherwise prints why `test` is skipped and the Debian
/// packages to install.
pub fn tool_available(test: &str, program: &str, packages: &str) -> bool {
    let found = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        // Written to the real stderr, past the test harness's capture, so that it shows.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: no {program} on PATH (Debian: apt-get install {packages})"
        );
    }
    found
}

/// Options for tests of answers, not of failures: a deadline and a connection timeout that a
/// loaded machine does not reach (a decision takes well under a millisecond on loopback). A
/// call a stalled machine let miss the default 100 ms would be answered by the failure policy,
/// and the test would see the policy's answer, not Redis's.
pub fn patient() -> cellrate_redis::RedisOptions {
    cellrate_redis::RedisOptions::default()
        .deadline(Duration::from_secs(5))
        .connection_timeout(Duration::from_secs(5))
}

/// Options for tests of faults: deadlines of tens of milliseconds.
pub fn fast_options() -> cellrate_redis::RedisOptions {
    cellrate_redis::RedisOptions::default()
        .deadline(Duration::from_millis(40))
        .connection_timeout(Duration::from_millis(100))
        .probe_interval(Duration::from_millis(20))
}

/// A loopback port that was free when asked; nothing listens on it until a test binds it.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().unwrap().port()
}

impl RedisServer {
    /// A server on a free port, or `None` (with a skip notice) if none is installed.
    pub fn start(test: &str) -> Option<RedisServer> {
        RedisServer::start_with(test, &[])
    }

    /// [`RedisServer::start`] with extra `redis-server` arguments.
    pub fn start_with(test: &str, extra: &[&str]) -> Option<RedisServer> {
        if !redis_available(test) {
            return None;
        }
        // A port free when asked may be taken before the server binds it, by a server of a test
        // running beside this one (or, for a Cluster node, its bus port 10000 above): such a
        // server exits at once, and starts again on another port.
        for _ in 0..5 {
            let port = free_port();
            let dir =
                std::env::temp_dir().join(format!("cellrate-redis-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("temp dir");
            let mut server = RedisServer {
                child: None,
                port,
                dir,
                extra: extra.iter().map(|s| s.to_string()).collect(),
            };
            if server.try_spawn() {
                return Some(server);
            }
        }
        panic!("redis-server did not start on any of 5 free ports");
    }

    fn spawn(&mut self) {
        assert!(
            self.try_spawn(),
            "redis-server did not start on port {}",
            self.port
        );
    }

    /// Starts the server on its port: `false` if it exited instead, or if the server answering
    /// on the port is another one.
    fn try_spawn(&mut self) -> bool {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let pid = child.id();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if self.exited() {
                return false;
            }
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        // The port accepts before the server has loaded; wait for a PING answer.
        while self.query::<String>(&mut redis::cmd("PING")).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not answer");
            std::thread::sleep(Duration::from_millis(10));
        }
        let info: String = self
            .query(redis::cmd("INFO").arg("server"))
            .expect("INFO server");
        if !info
            .lines()
            .any(|l| l.trim() == format!("process_id:{pid}"))
        {
            self.kill();
            return false;
        }
        true
    }

    /// `true` (and the child reaped) if the server process has exited.
    fn exited(&mut self) -> bool {
        let Some(child) = self.child.as_mut() else {
            return true;
        };
        if child.try_wait().expect("redis-server status").is_some() {
            self.child = None;
            return true;
        }
        false
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Runs one command on a fresh blocking connection.
    pub fn query<T: redis::FromRedisValue>(&self, cmd: &mut redis::Cmd) -> redis::RedisResult<T> {
        let client = redis::Client::open(self.url())?;
        let mut conn = client.get_connection_with_timeout(Duration::from_secs(2))?;
        cmd.query(&mut conn)
    }

    /// Kills the server (SIGKILL) and waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port (after [`RedisServer::kill`]).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Sends SIGSTOP (`pause == true`) or SIGCONT to the server process.
    pub fn pause(&self, pause: bool) {
        let pid = self
            .child
            .as_ref()
            .expect("server running")
            .id()
            .to_string();
        let signal = if pause { "-STOP" } else { "-CONT" };
        let status = Command::new("kill")
            .args([signal, &pid])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} {pid} failed");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // A paused server would not die from SIGKILL any later; resume it first anyway.
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A multi-threaded Tokio runtime for a test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// A new server, a runtime and a limiter connected to the server, or `None` (with a skip
/// notice) if no `redis-server` is installed.
pub fn connected(
    test: &str,
    quota: cellrate::Quota,
    options: cellrate_redis::RedisOptions,
) -> Option<(
    RedisServer,
    tokio::runtime::Runtime,
    cellrate_redis::RedisLimiter,
)> {
    let server = RedisServer::start(test)?;
    let rt = runtime();
    let limiter = connect_for_setup(&rt, &server.url(), quota, options);
    Some((server, rt, limiter))
}

/// A limiter connected to `url` with `options`, for a test's setup. The setup is not what the
/// test checks, and the short connection timeouts of the fault tests can be missed on a loaded
/// machine, so a failed attempt is made again, for up to 10 s.
pub fn connect_for_setup(
    rt: &tokio::runtime::Runtime,
    url: &str,
    quota: cellrate::Quota,
    options: cellrate_redis::RedisOptions,
) -> cellrate_redis::RedisLimiter {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match rt.block_on(cellrate_redis::RedisLimiter::connect_with(
            url,
            quota,
            options.clone(),
        )) {
            Ok(limiter) => return limiter,
            Err(e) if Instant::now() < deadline => eprintln!("setup: {e}; connecting again"),
            Err(e) => panic!("connect to the test's redis-server: {e}"),
        }
    }
}

impl RedisServer {
    /// Field `field` of command `command` in `INFO commandstats` (such as `calls` or
    /// `usec_per_call` of `evalsha`), since the last `CONFIG RESETSTAT`.
    pub fn commandstat(&self, command: &str, field: &str) -> f64 {
        let info: String = self.query(redis::cmd("INFO").arg("commandstats")).unwrap();
        let prefix = format!("cmdstat_{command}:");
        let entry = format!("{field}=");
        info.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|l| l.split(',').find_map(|f| f.strip_prefix(entry.as_str())))
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    }
}

impl RedisServer {
    /// Waits until this replica's link to its primary is up and the first sync is done.
    pub fn wait_in_sync(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let info: String = self
                .query(redis::cmd("INFO").arg("replication"))
                .unwrap_or_default();
            if info.contains("master_link_status:up") && info.contains("master_sync_in_progress:0")
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the replica never synced: {info}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the server says (`ROLE`) it is a primary.
    pub fn is_primary(&self) -> bool {
        let role: Vec<redis::Value> = self.query(&mut redis::cmd("ROLE")).unwrap_or_default();
        role.first() == Some(&redis::Value::BulkString(b"master".to_vec()))
    }

    /// The directory the server runs in (its files, certificates a test made).
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

impl RedisServer {
    /// The value given to the `redis-server` argument `name` (such as `--tls-port`), if any.
    pub fn arg(&self, name: &str) -> Option<&str> {
        let i = self.extra.iter().position(|a| a == name)?;
        self.extra.get(i + 1).map(String::as_str)
    }
}

impl RedisServer {
    /// A server that is a Cluster of one node serving every slot, or `None` (with a skip
    /// notice) if no `redis-server` is installed.
    pub fn start_one_node_cluster(test: &str) -> Option<RedisServer> {
        let cluster = [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
        ];
        let server = RedisServer::start_with(test, &cluster)?;
        let _: () = server
            .query(redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(0).arg(16383))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !server
            .query::<String>(redis::cmd("CLUSTER").arg("INFO"))
            .is_ok_and(|info| info.contains("cluster_state:ok"))
        {
            assert!(Instant::now() < deadline, "cluster never became ok");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(server)
    }

    /// Creates the ACL user `name` with password `pw`, or changes it: `ACL SETUSER name on >pw`
    /// and `rules` (such as `~*`, `+@all`, `-evalsha`).
    pub fn acl_user(&self, name: &str, rules: &[&str]) {
        let mut cmd = redis::cmd("ACL");
        cmd.arg("SETUSER").arg(name).arg("on").arg(">pw").arg(rules);
        let _: () = self.query(&mut cmd).unwrap();
    }

    /// `redis://name:pw@127.0.0.1:PORT`: the server as the ACL user `name`.
    pub fn url_as(&self, name: &str) -> String {
        format!("redis://{name}:pw@127.0.0.1:{}", self.port)
    }
}
