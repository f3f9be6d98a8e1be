//! A server in this process on a test clock, on loopback ports, and a tonic client of it.

use cellrate::ManualClock;
use cellrate_server::{Config, Listeners, Server, Settings};
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::rate_limit_descriptor::{
    Entry, RateLimitOverride,
};
use envoy_types::pb::envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_client::RateLimitServiceClient;
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use tokio::net::TcpListener;
use tonic::transport::Channel;

/// A directory of its own under the system's temporary directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "cellrate-server-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn write(&self, name: &str, text: &str) {
        write_atomically(&self.0, name, text);
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes `name` in `dir` by a rename into place, as config tools do.
pub fn write_atomically(dir: &Path, name: &str, text: &str) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

/// A server serving in this process on a manual clock.
pub struct Running {
    pub clock: ManualClock,
    pub server: Server,
    pub client: RateLimitServiceClient<Channel>,
    pub grpc_port: u16,
    pub http_port: u16,
    /// RESP (`CL.THROTTLE`).
    pub resp_port: u16,
    /// The config directory (removed with the server); `reload_memory.rs` rewrites it.
    #[allow(dead_code)]
    pub dir: TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Running {
    /// Serves `files` (name, YAML) with `settings` changed by `tweak`.
    pub async fn start(files: &[(&str, &str)], tweak: impl FnOnce(&mut Settings)) -> Running {
        let dir = TempDir::new("serve");
        for (name, text) in files {
            dir.write(name, text);
        }
        let mut settings = Settings::for_dir(&dir.0);
        settings.reload_debounce_ms = 5;
        tweak(&mut settings);
        let config = Config::load_dir(&dir.0).unwrap();
        let clock = ManualClock::new();
        let server = Server::with_clock(settings, config, Arc::new(clock.clone()))
            .await
            .unwrap();
        let grpc = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let http = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let resp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = |l: &TcpListener| l.local_addr().unwrap().port();
        let (grpc_port, http_port, resp_port) = (port(&grpc), port(&http), port(&resp));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let listeners = Listeners::new(grpc, http).resp(resp);
        let task = tokio::spawn(server.clone().serve_with(listeners, async move {
            let _ = rx.await;
        }));
        let client = RateLimitServiceClient::connect(format!("http://127.0.0.1:{grpc_port}"))
            .await
            .unwrap();
        Running {
            clock,
            server,
            client,
            grpc_port,
            http_port,
            resp_port,
            dir,
            stop: Some(tx),
            task: Some(task),
        }
    }

    /// One call.
    pub async fn call(
        &mut self,
        request: RateLimitRequest,
    ) -> Result<RateLimitResponse, tonic::Status> {
        self.client
            .should_rate_limit(request)
            .await
            .map(|r| r.into_inner())
    }

    /// A plain HTTP GET of the HTTP port: the status and body.
    pub async fn get(&self, path: &str) -> (u16, String) {
        http_get(self.http_port, path).await
    }

    /// Stops the server and waits for it.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap().unwrap();
        }
    }
}

/// A plain HTTP/1.1 GET on loopback: the status and body.
pub async fn http_get(port: u16, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// A descriptor of `(key, value)` entries.
pub fn descriptor(entries: &[(&str, &str)]) -> RateLimitDescriptor {
    RateLimitDescriptor {
        entries: entries
            .iter()
            .map(|(k, v)| Entry {
                key: (*k).to_owned(),
                value: (*v).to_owned(),
            })
            .collect(),
        ..Default::default()
    }
}

/// A descriptor with a per-call limit override.
pub fn overridden(
    entries: &[(&str, &str)],
    requests_per_unit: u32,
    unit: i32,
) -> RateLimitDescriptor {
    RateLimitDescriptor {
        limit: Some(RateLimitOverride {
            requests_per_unit,
            unit,
        }),
        ..descriptor(entries)
    }
}

/// A request of `domain` with `descriptors` and a request-level `hits_addend`.
pub fn request(
    domain: &str,
    descriptors: Vec<RateLimitDescriptor>,
    hits_addend: u32,
) -> RateLimitRequest {
    RateLimitRequest {
        domain: domain.to_owned(),
        descriptors,
        hits_addend,
    }
}

/// The value of the series `name` (exact text, labels included) in a Prometheus text.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// The server binary as a command, without the environment variables it reads (the flags
/// given decide).
pub fn binary() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cellrate-server"));
    for name in [
        "HOST",
        "GRPC_PORT",
        "PORT",
        "RUNTIME_ROOT",
        "RUNTIME_SUBDIRECTORY",
        "REDIS_URL",
        "REDIS_TYPE",
        "LOG_LEVEL",
        "LOG_FORMAT",
        "CELLRATE_RESP_PASSWORD",
    ] {
        command.env_remove(name);
    }
    command
}

/// A plain HTTP/1.1 POST on loopback: the status, the response's header block and its body.
pub async fn http_post(
    port: u16,
    path: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let kind = content_type
        .map(|t| format!("Content-Type: {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{kind}Content-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // A server may answer (413) before the body is sent whole, and close.
    let _ = stream.write_all(body).await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (headers, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (status, headers.to_owned(), body.to_owned())
}

/// Whether python3 can `import` `modules` (the packages of `install`, from PyPI); if not, the
/// test is skipped with a notice, unless `CELLRATE_REQUIRE_PYTHON=1` (as `.ci/run` sets after
/// installing them), where that fails it.
pub fn python_has(modules: &str, install: &str) -> bool {
    let found = std::process::Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var("CELLRATE_REQUIRE_PYTHON").as_deref() != Ok("1"),
            "python3 with {install} is required (CELLRATE_REQUIRE_PYTHON=1)"
        );
        eprintln!("skipped: python3 with {install} not found (pip install {install})");
    }
    found
}

/// A server in this process whose RESP clients must give `password`.
pub async fn with_password(password: &str) -> Running {
    let password = cellrate_server::settings::Password::parse(password).unwrap();
    Running::start(&[], move |settings| settings.resp_password = Some(password)).await
}
