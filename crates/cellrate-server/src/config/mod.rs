//! The config: envoyproxy/ratelimit's YAML files, one domain each, in a directory.
//!
//! [`Config::load_dir`] reads every `*.yaml` and `*.yml` file of a directory (following
//! symlinks, skipping names that start with a dot, such as the `..data` of a Kubernetes
//! ConfigMap), checks them all and answers the config or every error found, each with its
//! file, line and key ([`ConfigError`]).

mod build;
mod error;
mod rule;
mod tree;
mod unit;
mod yaml;

pub use error::{ConfigError, ConfigErrors};
pub use rule::{Limit, Reported, Rule};
pub(crate) use tree::{Level, Matched};
pub use unit::Unit;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// The largest config file read, in bytes: a bound on what a mistaken file can cost.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// A loaded, checked config: the domains' descriptor trees and their rules.
#[derive(Debug, Default)]
pub struct Config {
    pub(crate) domains: HashMap<Arc<str>, Level>,
    pub(crate) rules: Vec<Rule>,
    /// The files it was read from, `(name, text)`: a reload that reads the same is no change.
    pub(crate) sources: Vec<(String, String)>,
}

impl Config {
    /// Reads and checks every config file of `dir`.
    pub fn load_dir(dir: &Path) -> Result<Config, ConfigErrors> {
        Config::load_dir_merging(dir, false)
    }

    /// [`load_dir`](Self::load_dir), merging the files of one domain if `merge_domains`
    /// ([`from_files_merging`](Self::from_files_merging)).
    pub fn load_dir_merging(dir: &Path, merge_domains: bool) -> Result<Config, ConfigErrors> {
        let files = Config::read_dir(dir)?;
        let named: Vec<(&str, &str)> = files
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        Config::from_files_merging(&named, merge_domains)
    }

    /// The config files of `dir` as `(name, text)`, sorted by name: what
    /// [`load_dir`](Self::load_dir) checks.
    pub fn read_dir(dir: &Path) -> Result<Vec<(String, String)>, ConfigErrors> {
        let whole = |message: String| {
            ConfigErrors(vec![ConfigError {
                file: dir.display().to_string(),
                line: 0,
                column: 0,
                key: String::new(),
                message,
            }])
        };
        let entries = std::fs::read_dir(dir)
            .map_err(|e| whole(format!("cannot read the config directory: {e}")))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| whole(format!("cannot read the directory: {e}")))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let yaml = name.ends_with(".yaml") || name.ends_with(".yml");
            if name.starts_with('.') || !yaml {
                continue;
            }
            // Follows symlinks: a ConfigMap's files are links into its `..data` directory.
            match std::fs::metadata(entry.path()) {
                Ok(meta) if meta.is_file() => names.push(name),
                _ => {}
            }
        }
        names.sort();
        let mut files = Vec::with_capacity(names.len());
        let mut errors = Vec::new();
        for name in names {
            let path = dir.join(&name);
            let error = |message: String| ConfigError {
                file: name.clone(),
                line: 0,
                column: 0,
                key: String::new(),
                message,
            };
            match std::fs::metadata(&path) {
                Ok(meta) if meta.len() > MAX_FILE_BYTES => {
                    errors.push(error(format!(
                        "file larger than {MAX_FILE_BYTES} bytes ({})",
                        meta.len()
                    )));
                    continue;
                }
                _ => {}
            }
            match std::fs::read_to_string(&path) {
                Ok(text) => files.push((name, text)),
                Err(e) => errors.push(error(format!("cannot read: {e}"))),
            }
        }
        if errors.is_empty() {
            Ok(files)
        } else {
            Err(ConfigErrors(errors))
        }
    }

    /// Checks config files given as `(name, text)`: what [`load_dir`](Self::load_dir) does
    /// once it has read them.
    pub fn from_files(files: &[(&str, &str)]) -> Result<Config, ConfigErrors> {
        Config::from_files_merging(files, false)
    }

    /// [`from_files`](Self::from_files), where several files of one domain are merged into
    /// it if `merge_domains` (the reference server's `MERGE_DOMAIN_CONFIG`; a descriptor
    /// defined twice is still an error) rather than refused.
    pub fn from_files_merging(
        files: &[(&str, &str)],
        merge_domains: bool,
    ) -> Result<Config, ConfigErrors> {
        let mut config = Config {
            sources: files
                .iter()
                .map(|&(n, t)| (n.to_owned(), t.to_owned()))
                .collect(),
            ..Config::default()
        };
        let mut errors = Vec::new();
        let mut seen: HashMap<Arc<str>, &str> = HashMap::new();
        for &(name, text) in files {
            let parsed: yaml::FileYaml = match serde_saphyr::from_str(text) {
                Ok(parsed) => parsed,
                Err(e) => {
                    errors.push(parse_error(name, &e));
                    continue;
                }
            };
            let mut builder = build::Builder {
                file: name,
                rules: &mut config.rules,
                errors: &mut errors,
            };
            let Some(domain) = builder.domain(&parsed) else {
                continue;
            };
            match seen.get(&domain) {
                Some(first) if !merge_domains => {
                    errors.push(ConfigError {
                        file: name.to_owned(),
                        line: parsed.domain.referenced.line(),
                        column: parsed.domain.referenced.column(),
                        key: "domain".to_owned(),
                        message: format!(
                            "duplicate domain '{domain}' in config file (also in {first})"
                        ),
                    });
                    continue;
                }
                Some(_) => {}
                None => {
                    seen.insert(domain.clone(), name);
                }
            }
            let level = config.domains.entry(domain.clone()).or_default();
            builder.descriptors(&domain, &parsed, level);
        }
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(ConfigErrors(errors))
        }
    }

    /// The rules, in the order of the files (sorted by name) and of each file.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The domains configured.
    pub fn domains(&self) -> impl Iterator<Item = &str> {
        self.domains.keys().map(|d| &**d)
    }
}

/// A YAML error at its position, without the library's rendering of the source around it.
fn parse_error(file: &str, e: &serde_saphyr::Error) -> ConfigError {
    let (line, column) = e.location().map_or((0, 0), |at| (at.line(), at.column()));
    let message = e.without_snippet().to_string();
    // The position is given once, in front.
    let suffix = format!(" at line {line}, column {column}");
    let message = message
        .strip_suffix(&suffix)
        .map(str::to_owned)
        .unwrap_or(message);
    ConfigError {
        file: file.to_owned(),
        line,
        column,
        key: String::new(),
        message,
    }
}
