//! `LayerStats`: what a layer decided, counted.

use cellrate::StripedCounts;

/// Counts of a layer's answers since it was built (shared by its clones), per request: a
/// request checked against several policies counts once. `allowed` and `denied` mean what they
/// mean in [`Stats`](cellrate::Stats); the limiters behind the policies keep their own
/// [`Stats`](cellrate::Stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LayerStats {
    /// Requests admitted.
    pub allowed: u64,
    /// Requests denied (429 or `RESOURCE_EXHAUSTED`): the `denied` of [`Stats`](cellrate::Stats).
    pub denied: u64,
    /// Requests shadow mode let through that the limit would have denied.
    pub shadow_denied: u64,
    /// Requests answered by [`MissingKey`](super::MissingKey) because a policy found no key
    /// (in shadow mode: let through).
    pub no_key: u64,
    /// Refunds made because the response matched the refund predicate.
    pub refunded: u64,
    /// Requests answered 500 (gRPC `INTERNAL`) for a fault of the deployment, such as a Redis
    /// store that refuses the limiter's commands: neither admitted nor denied.
    pub faults: u64,
}

/// Which count of [`Counters`] an answer adds to.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Count {
    Allowed,
    Denied,
    ShadowDenied,
    NoKey,
    Refunded,
    // Only Redis policies meet faults; the lane is there (and 0) without them.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    Fault,
}

/// The live counters, a line per thread (cellrate's `StripedCounts`): one shared counter would
/// be a second contended cache line on every request, beside the bucket's.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    lines: StripedCounts<6>,
}

impl Counters {
    #[inline]
    pub(crate) fn bump(&self, count: Count) {
        self.lines.add(count as usize);
    }

    pub(crate) fn snapshot(&self) -> LayerStats {
        let [allowed, denied, shadow_denied, no_key, refunded, faults] = self.lines.sums();
        LayerStats {
            allowed,
            denied,
            shadow_denied,
            no_key,
            refunded,
            faults,
        }
    }
}
