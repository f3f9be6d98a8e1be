//! The server's settings: the command line flags, with the reference server's environment
//! variables as fallbacks (`GRPC_PORT`, `PORT`, `RUNTIME_ROOT`, ...).

use clap::{Parser, ValueEnum};
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// An Envoy rate limit service (RLS v3) deciding with exact GCRA buckets, configured with
/// envoyproxy/ratelimit's YAML files.
#[derive(Clone, Debug, Parser)]
#[command(name = "cellrate-server", version, about, long_about = None)]
#[non_exhaustive]
pub struct Settings {
    /// The directory of config files (`*.yaml`, `*.yml`, one domain each), watched for changes.
    /// Without it, `$RUNTIME_ROOT/$RUNTIME_SUBDIRECTORY/config` as the reference server reads.
    #[arg(long, value_name = "DIR")]
    pub config: Option<PathBuf>,

    /// Check the config files of DIR, print what is wrong (file, line, key) and exit: 0 if
    /// valid, 1 if not.
    #[arg(long, value_name = "DIR", conflicts_with = "config")]
    pub validate: Option<PathBuf>,

    /// The reference server's runtime root (used when --config is not given).
    #[arg(
        long,
        env = "RUNTIME_ROOT",
        default_value = "/srv/runtime_data/current",
        hide = true
    )]
    pub runtime_root: PathBuf,

    /// The reference server's runtime subdirectory (used when --config is not given).
    #[arg(long, env = "RUNTIME_SUBDIRECTORY", default_value = "", hide = true)]
    pub runtime_subdirectory: String,

    /// Merge config files of one domain (a descriptor defined twice is still an error)
    /// instead of refusing the second.
    #[arg(long, env = "MERGE_DOMAIN_CONFIG", default_value_t = false)]
    pub merge_domains: bool,

    /// The address the gRPC and HTTP ports listen on.
    #[arg(long, env = "HOST", default_value = "0.0.0.0")]
    pub host: IpAddr,

    /// The gRPC port: RLS v3 (`ShouldRateLimit`) and grpc.health.v1.
    #[arg(long, env = "GRPC_PORT", default_value_t = 8081)]
    pub grpc_port: u16,

    /// The HTTP port: `/metrics` (Prometheus), `/healthz`, `/readyz`, and `POST /json` and
    /// `POST /throttle` unless --json-port moves them.
    #[arg(long, env = "PORT", default_value_t = 8080)]
    pub http_port: u16,

    /// A port of their own for `POST /json` (RLS in JSON) and `POST /throttle`, off the HTTP
    /// port.
    #[arg(long, value_name = "PORT")]
    pub json_port: Option<u16>,

    /// Serve RESP (the Redis protocol) on this port: redis-cell's `CL.THROTTLE` for any Redis
    /// client. Needs no config directory.
    #[arg(long, value_name = "PORT")]
    pub resp_port: Option<u16>,

    /// The password RESP clients must give (`AUTH`, or `HELLO ... AUTH`) before any command.
    #[arg(long, env = "CELLRATE_RESP_PASSWORD", hide_env_values = true, value_parser = Password::parse)]
    pub resp_password: Option<Password>,

    /// The most RESP connections open at once; one more is told so and closed.
    #[arg(long, default_value_t = 10_000)]
    pub resp_max_connections: usize,

    /// The largest RESP command, in bytes (its arguments and their framing): a larger one is
    /// answered with a protocol error and its connection closed.
    #[arg(long, default_value_t = 64 * 1024, value_parser = clap::value_parser!(u32).range(64..))]
    pub resp_max_command_bytes: u32,

    /// The most arguments of one RESP command.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(8..))]
    pub resp_max_args: u32,

    /// How long a RESP command may take to arrive once its first byte has, and a reply to be
    /// taken by its client, in milliseconds; the connection is closed after.
    #[arg(long, default_value_t = 10_000)]
    pub resp_timeout_ms: u64,

    /// Close a RESP connection idle this long, in seconds (0: never, as Redis's default).
    #[arg(long, default_value_t = 0)]
    pub resp_idle_secs: u64,

    /// The most keys the `CL.THROTTLE` buckets in this process hold (about 300 bytes each
    /// while used); --overflow says what a new key gets when there is no room.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=1 << 28))]
    pub throttle_max_keys: u64,

    /// A PEM certificate chain: serve gRPC over TLS (with --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// PEM certificates of the CAs whose client certificates are required (mutual TLS).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,

    /// The most keys each rule's table holds (its memory is allocated when the rule is
    /// loaded: about 20 bytes a key). A per-call limit override gets a table of this size too.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=1 << 28))]
    pub max_keys: u64,

    /// What a new key gets when its table has no room: `deny` (OVER_LIMIT, or a limited
    /// `CL.THROTTLE` reply, until room comes; no key loses its state) or `evict` (the bucket
    /// nearest to full is forgotten).
    #[arg(long, value_enum, default_value_t = Overflow::Deny)]
    pub overflow: Overflow,

    /// The most distinct per-call limit overrides (requests_per_unit, unit) a domain holds
    /// tables for; a request with one more is answered INVALID_ARGUMENT.
    #[arg(long, default_value_t = 16)]
    pub max_overrides: usize,

    /// The most descriptors in one request.
    #[arg(long, default_value_t = 64)]
    pub max_descriptors: usize,

    /// The most entries in one descriptor.
    #[arg(long, default_value_t = 16)]
    pub max_entries: usize,

    /// The longest domain, entry key or entry value, in bytes.
    #[arg(long, default_value_t = 1024)]
    pub max_string_bytes: usize,

    /// The largest gRPC message accepted, and the largest body of `POST /json` and
    /// `POST /throttle`, in bytes.
    #[arg(long, default_value_t = 64 * 1024)]
    pub max_message_bytes: usize,

    /// The most concurrent HTTP/2 streams per gRPC connection.
    #[arg(long, default_value_t = 1024)]
    pub max_concurrent_streams: u32,

    /// The most gRPC connections open at once; more wait to be accepted.
    #[arg(long, default_value_t = 4096)]
    pub max_connections: usize,

    /// The most distinct values a rule with `detailed_metric` labels its metrics with; the
    /// rest are counted under the value `_other`.
    #[arg(long, default_value_t = 100)]
    pub detailed_metric_limit: usize,

    /// Response headers: `off`, `ietf` (`RateLimit` and `RateLimit-Policy`), or `draft`
    /// (envoyproxy/ratelimit's `RateLimit-Limit`, `-Remaining`, `-Reset`).
    #[arg(long, value_enum, default_value_t = Headers::Off)]
    pub response_headers: Headers,

    /// Keep buckets in Redis, shared by every server given the same URL: `redis://host:port`,
    /// `rediss://` for TLS; with --redis-type cluster, seed URLs separated by commas; with
    /// sentinel, `SERVICE,SENTINEL_URL[,SENTINEL_URL...]`.
    #[arg(long, env = "REDIS_URL", value_name = "URL")]
    pub redis: Option<String>,

    /// How --redis is deployed.
    #[arg(long, env = "REDIS_TYPE", value_enum, ignore_case = true, default_value_t = RedisType::Single)]
    pub redis_type: RedisType,

    /// What a decision is when Redis does not answer in time: `open` (admit), `closed`
    /// (refuse), or `local` (decide in this process with a 1/--redis-servers share of each limit).
    #[arg(long, value_enum, default_value_t = RedisFailure::Local)]
    pub redis_failure: RedisFailure,

    /// How many servers share the limits, for --redis-failure local.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub redis_servers: u32,

    /// The prefix of every Redis key this server writes (its own: nothing else may use it).
    #[arg(long, default_value = "cellrate-rls:")]
    pub redis_prefix: String,

    /// How long a Redis decision may take before the failure policy answers, in milliseconds.
    #[arg(long, default_value_t = 50)]
    pub redis_deadline_ms: u64,

    /// How long the config directory must be quiet after a change before it is reloaded, in
    /// milliseconds (one reload for a burst of writes).
    #[arg(long, default_value_t = 100)]
    pub reload_debounce_ms: u64,

    /// How long to wait for calls in flight after SIGTERM or SIGINT, in seconds.
    #[arg(long, default_value_t = 10)]
    pub shutdown_grace_secs: u64,

    /// Log format.
    #[arg(long, env = "LOG_FORMAT", value_enum, ignore_case = true, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Log level (a tracing filter such as `info` or `cellrate_server=debug`).
    #[arg(long, env = "LOG_LEVEL", default_value = "info")]
    pub log_level: String,
}

/// A password, never shown by `Debug`.
#[derive(Clone)]
pub struct Password(String);

impl Password {
    /// A password (not empty).
    pub fn parse(text: &str) -> Result<Password, String> {
        if text.is_empty() {
            return Err("an empty password".to_owned());
        }
        Ok(Password(text.to_owned()))
    }

    /// Whether `given` is the password, in a time that does not depend on where they differ.
    pub fn matches(&self, given: &[u8]) -> bool {
        let mine = self.0.as_bytes();
        let differ = mine
            .iter()
            .zip(given)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        differ == 0 && mine.len() == given.len()
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(..)")
    }
}

/// What a new key gets when its rule's table is full (`--overflow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Overflow {
    /// Refuse it (OVER_LIMIT) until a slot frees: no key loses its state.
    Deny,
    /// Forget the bucket nearest to full to make room.
    Evict,
}

/// Which rate limit headers the responses carry (`--response-headers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Headers {
    /// None.
    Off,
    /// The IETF fields `RateLimit` and `RateLimit-Policy`.
    Ietf,
    /// envoyproxy/ratelimit's `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`.
    Draft,
}

/// How the Redis of `--redis` is deployed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RedisType {
    /// One server (or a name that follows failovers).
    Single,
    /// A Redis Cluster.
    Cluster,
    /// A primary found through Sentinels.
    Sentinel,
}

/// What a decision is when Redis does not answer (`--redis-failure`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RedisFailure {
    /// Admit.
    Open,
    /// Refuse.
    Closed,
    /// Decide locally with this server's share of each limit.
    Local,
}

/// The log format (`--log-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

impl Settings {
    /// The settings of `cellrate-server --config DIR` with every other flag at its default, the
    /// environment ignored: for servers embedded in programs and tests.
    pub fn for_dir(dir: impl Into<PathBuf>) -> Settings {
        use clap::{CommandFactory, FromArgMatches};
        let command = Settings::command().mut_args(|arg| arg.env(None::<&str>));
        let matches = command
            .try_get_matches_from(["cellrate-server"])
            .expect("every flag has a default");
        let mut settings =
            Settings::from_arg_matches(&matches).expect("the defaults make valid settings");
        settings.config = Some(dir.into());
        settings
    }

    /// The config directory: `--config`, else the reference server's runtime directory.
    pub fn config_dir(&self) -> PathBuf {
        match &self.config {
            Some(dir) => dir.clone(),
            None => self
                .runtime_root
                .join(&self.runtime_subdirectory)
                .join("config"),
        }
    }

    /// `--shutdown-grace-secs` as a duration.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }
}
