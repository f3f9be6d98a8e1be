//! An Envoy rate limit service (RLS v3) that decides with exact GCRA buckets.
//!
//! `cellrate-server --config DIR` serves `envoy.service.ratelimit.v3.RateLimitService` on the
//! gRPC port and `/metrics`, `/healthz`, `/readyz` on the HTTP port, from envoyproxy/ratelimit's
//! YAML config files, reloaded when they change. The library is the same server, to embed
//! or to test in process on any [`cellrate::Clock`]:
//!
//! ```no_run
//! use cellrate::ManualClock;
//! use cellrate_server::{Config, Server, Settings};
//! use std::sync::Arc;
//!
//! # async fn run() -> Result<(), String> {
//! let config = Config::from_files(&[(
//!     "edge.yaml",
//!     "domain: edge\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 5}\n",
//! )])
//! .map_err(|e| e.to_string())?;
//! let clock = ManualClock::new();
//! let server = Server::with_clock(Settings::for_dir("config"), config, Arc::new(clock.clone())).await?;
//! let rls = server.rls_service(); // a tonic service: mount it in a router of your own
//! # let _ = rls;
//! # Ok(())
//! # }
//! ```
//!
//! How a descriptor maps to a bucket, the config mapping, reloads and the all-or-nothing rule
//! are in docs/design.md, *The rate limit server*.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod active;
pub mod config;
mod connections;
mod counts;
mod decide;
mod http;
mod keys;
mod metrics;
mod reload;
mod resp;
mod rls;
mod serve;
mod server;
pub mod settings;
mod storage;
mod throttle;

pub use config::{Config, ConfigError, ConfigErrors};
pub use rls::Rls;
pub use serve::{termination, Listeners};
pub use server::Server;
pub use settings::Settings;
pub use storage::embedded::SharedClock;
