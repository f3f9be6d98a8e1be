//! `Shared`: what every clone of a layer and of its services holds, the options included.

use super::denial::Denial;
use super::fault::FaultLog;
use super::headers::{FieldChoice, PolicyInfo};
use super::key::{MissingKey, RequestHead};
use super::stats::Counters;
use bytes::Bytes;
use http::header::HeaderValue;
use http::{response, Response};
use std::hash::RandomState;

pub(crate) type CostFn = dyn Fn(&RequestHead<'_>) -> u32 + Send + Sync;
pub(crate) type RefundFn = dyn Fn(&response::Parts) -> bool + Send + Sync;
pub(crate) type DenialFn = dyn Fn(&Denial<'_>) -> Response<Bytes> + Send + Sync;

/// What every clone of a layer shares.
pub(crate) struct Shared<B> {
    pub(crate) backend: B,
    pub(crate) policies: Vec<PolicyInfo>,
    /// `RateLimit-Policy` for the configured quotas, the same on every response; `None` when
    /// the process keeps too many such values already (`interned.rs`): each response then
    /// writes its own.
    pub(crate) static_policy: Option<&'static HeaderValue>,
    pub(crate) options: Options,
    pub(crate) counters: Counters,
    /// The faults of the deployment logged so far.
    pub(crate) faults: FaultLog,
    pub(crate) hasher: RandomState,
    /// Whether an admission has anything done to its response (headers, a refund): without,
    /// the service decides it with [`decide_plain`](super::backend::sealed::Backend::decide_plain).
    pub(crate) records_admissions: bool,
}

/// The options of a layer; see [`RateLimitBuilder`](super::RateLimitBuilder).
pub(crate) struct Options {
    pub(crate) cost: Option<Box<CostFn>>,
    pub(crate) missing_key: MissingKey,
    pub(crate) shadow: bool,
    pub(crate) refund_if: Option<Box<RefundFn>>,
    pub(crate) refund_on_drop: bool,
    pub(crate) on_allowed: FieldChoice,
    pub(crate) on_denied: FieldChoice,
    pub(crate) partition_key: bool,
    pub(crate) problem_json: bool,
    pub(crate) denial: Option<Box<DenialFn>>,
}

impl Options {
    /// Whether an admission may be given back, so that its booking is kept.
    pub(crate) fn refunds(&self) -> bool {
        self.refund_if.is_some() || self.refund_on_drop
    }
}
