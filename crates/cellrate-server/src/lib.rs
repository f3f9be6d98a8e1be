//! An Envoy rate limit service (RLS v3) that decides with exact GCRA buckets.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod settings;

pub use config::{Config, ConfigError, ConfigErrors};
pub use settings::Settings;
