//! Helpers shared by the integration tests (declared once by `tests/integration.rs`; the test
//! files take it with `use crate::common;`).
#![allow(dead_code)]

use cellrate::{Nanos, Quota};
use std::time::Duration;

/// A quota of one token every `interval_ns` nanoseconds, holding `burst`.
pub fn quota(interval_ns: u64, burst: u32) -> Quota {
    Quota::try_new(Duration::from_nanos(interval_ns), burst).unwrap()
}

/// `ns` nanoseconds on a limiter's clock.
pub fn at(ns: u64) -> Nanos {
    Nanos::new(ns)
}
