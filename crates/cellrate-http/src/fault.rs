//! Faults of the deployment: requests the layer cannot decide for a mistake of the server's
//! own (no peer address recorded, a Redis store that refuses the limiter's commands or holds
//! other data under its keys). Answered 500 (gRPC `INTERNAL`), never as a refusal of the
//! request, and logged with the fix: once per layer and fault at error level, at debug level
//! after that, so that a fault on every request does not flood the log. Where no `tracing`
//! subscriber listens, the first one goes to standard error instead, so that the fix reaches a
//! user who set none up.

use std::fmt::Display;
use std::sync::Mutex;

/// A request the layer could not decide for a fault of the deployment.
#[cfg(feature = "redis")]
#[derive(Debug)]
pub struct Fault {
    /// What went wrong.
    pub(crate) what: String,
    /// What mends it: the same text for every request with this fault.
    pub(crate) fix: &'static str,
}

/// The faults a layer has logged at error level, by their fix.
#[derive(Debug, Default)]
pub(crate) struct FaultLog {
    logged: Mutex<Vec<&'static str>>,
}

impl FaultLog {
    /// Logs `what`, answered with `answer`: the first time `fix` is met at error level with
    /// the fix (to standard error where no subscriber listens), at debug level after.
    #[cold]
    pub(crate) fn log(&self, what: &dyn Display, fix: &'static str, answer: &str) {
        let first = {
            let mut logged = self.logged.lock().unwrap_or_else(|e| e.into_inner());
            let first = !logged.contains(&fix);
            if first {
                logged.push(fix);
            }
            first
        };
        if !first {
            tracing::debug!("rate limit: {what}; answered {answer}");
        } else if tracing::enabled!(tracing::Level::ERROR) {
            tracing::error!(
                "rate limit: {what}; answered {answer} until it is fixed: {fix} (logged once)"
            );
        } else {
            eprintln!(
                "rate limit: {what}; answered {answer} until it is fixed: {fix} (printed once: \
                 no tracing subscriber is installed)"
            );
        }
    }
}

/// The body of a 500 for a fault: in a debug build what went wrong and its fix, for the
/// developer trying the server; in a release build only where to look, since the client is
/// anyone.
pub(crate) fn body_text(what: &dyn Display, fix: &str) -> String {
    if cfg!(debug_assertions) {
        format!("{what}; {fix} (this text is shown in debug builds only)")
    } else {
        "the rate limit is misconfigured (the server log says why)".to_owned()
    }
}
