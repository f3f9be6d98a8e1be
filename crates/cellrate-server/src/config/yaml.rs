//! The YAML of one config file, as envoyproxy/ratelimit writes it, with cellrate's two
//! extensions (`burst`, `per`). Every key is known: a misspelt one is an error, not a silently
//! ignored line. Values keep their position for the checks `rules.rs` makes after parsing.

use serde::Deserialize;
use serde_saphyr::Spanned;

/// A file: one domain and its descriptor tree.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileYaml {
    pub domain: Spanned<String>,
    #[serde(default)]
    pub descriptors: Vec<Spanned<DescriptorYaml>>,
}

/// A descriptor: an entry key, an optional value, an optional limit and children.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DescriptorYaml {
    pub key: Spanned<String>,
    #[serde(default)]
    pub value: Option<Spanned<String>>,
    #[serde(default)]
    pub rate_limit: Option<Spanned<RateLimitYaml>>,
    #[serde(default)]
    pub descriptors: Vec<Spanned<DescriptorYaml>>,
    #[serde(default)]
    pub shadow_mode: bool,
    #[serde(default)]
    pub detailed_metric: bool,
    #[serde(default)]
    pub value_to_metric: bool,
    #[serde(default)]
    pub share_threshold: bool,
    #[serde(default)]
    pub quota_mode: Option<Spanned<bool>>,
    /// Free-form data for other tools; read and ignored.
    #[serde(default)]
    #[allow(dead_code)]
    pub metadata: Option<serde::de::IgnoredAny>,
}

/// A descriptor's limit.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RateLimitYaml {
    #[serde(default)]
    pub unit: Option<Spanned<String>>,
    #[serde(default)]
    pub requests_per_unit: Option<Spanned<u32>>,
    #[serde(default)]
    pub unlimited: bool,
    #[serde(default)]
    pub name: Option<Spanned<String>>,
    #[serde(default)]
    pub replaces: Vec<Spanned<ReplacesYaml>>,
    /// cellrate: the bucket's capacity, if not `requests_per_unit`.
    #[serde(default)]
    pub burst: Option<Spanned<u32>>,
    /// cellrate: a period of any length (`30s`, `5m`, `250ms`) instead of `unit`.
    #[serde(default)]
    pub per: Option<Spanned<String>>,
}

/// One entry of `replaces`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReplacesYaml {
    #[serde(default)]
    pub name: String,
}
