//! `Denial`: what a custom response to a denied request is told of it.

use core::time::Duration;

/// A denied request, for a custom response to it
/// ([`RateLimitBuilder::on_denied`](super::RateLimitBuilder::on_denied)).
#[derive(Debug)]
pub struct Denial<'a> {
    pub(crate) retry_after: Option<Duration>,
    pub(crate) grpc: bool,
    pub(crate) violated: &'a [&'a str],
}

impl Denial<'_> {
    /// When the same request would pass; `None` if it never can (its cost exceeds a burst).
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// Whether the request is a gRPC or gRPC-Web call (`content-type: application/grpc...`,
    /// in any case).
    pub fn is_grpc(&self) -> bool {
        self.grpc
    }

    /// The names of the policies that denied it.
    pub fn violated_policies(&self) -> &[&str] {
        self.violated
    }
}
