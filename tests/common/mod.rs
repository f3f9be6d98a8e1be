//! Helpers shared by the integration tests (each test file is its own crate and includes this
//! module with `mod common;`).
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
