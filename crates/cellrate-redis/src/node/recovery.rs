//! How a node comes back: connection attempts after a loss, and probes of a tripped breaker,
//! both backing off.

use super::{Inner, State};
use crate::error::Error;
use redis::aio::MultiplexedConnection;
use redis::Value;
use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::Duration;

/// The longest backoff between attempts, in probe intervals.
const MAX_BACKOFF_INTERVALS: u32 = 16;

impl Inner {
    /// The pause before the next attempt: none for a first strike, then the probe interval
    /// doubled per strike up to 16 of them, each between half and all of it (jitter).
    fn backoff(&self) -> Duration {
        // Relaxed: a hint.
        let strikes = self.strikes.load(Ordering::Relaxed);
        if strikes <= 1 {
            return Duration::ZERO;
        }
        let factor = (1u32 << (strikes - 2).min(4)).min(MAX_BACKOFF_INTERVALS);
        let full = self.settings.probe_interval.saturating_mul(factor);
        full.mul_f64(0.5 + fastrand::f64() / 2.0)
    }
}

/// Connects again, each attempt after its backoff; after the attempts allowed (still
/// failing) marks the node down, and keeps trying, backing off, until it answers. Ends when
/// the limiter is dropped.
pub(super) async fn reconnect(node: Weak<Inner>) {
    let mut attempts = 0usize;
    loop {
        let pause = match node.upgrade() {
            Some(inner) => inner.backoff(),
            None => return,
        };
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        let Some(inner) = node.upgrade() else { return };
        match inner.try_connect().await {
            Ok(conn) => return inner.up(conn),
            Err(why) => {
                attempts += 1;
                // Relaxed: a hint for the backoff.
                inner.strikes.fetch_add(1, Ordering::Relaxed);
                if attempts >= inner.settings.attempts && !matches!(*inner.read(), State::Down(_)) {
                    inner.down(why);
                }
            }
        }
    }
}

/// Probes a tripped connection with a script that writes nothing, backing off, until one
/// answers within the deadline (the node is up again) or the connection is replaced.
pub(super) async fn probe_tripped(node: Weak<Inner>, conn: MultiplexedConnection, generation: u64) {
    loop {
        let Some(inner) = node.upgrade() else { return };
        // Relaxed: a hint for the backoff.
        inner.strikes.fetch_add(1, Ordering::Relaxed);
        let pause = inner.backoff().max(inner.settings.probe_interval / 2);
        let deadline = inner.settings.deadline;
        drop(inner);
        tokio::time::sleep(pause).await;
        let mut c = conn.clone();
        let mut probe = redis::cmd("EVAL");
        probe.arg("return 1").arg(0);
        let answer = tokio::time::timeout(deadline, probe.query_async::<Value>(&mut c)).await;
        let Some(inner) = node.upgrade() else { return };
        if !matches!(*inner.read(), State::Tripped(_)) || !inner.current(generation) {
            return;
        }
        match answer {
            Ok(Ok(_)) => {
                let mut state = inner.write();
                if matches!(*state, State::Tripped(_)) && inner.current(generation) {
                    // Relaxed: under the state lock; hints.
                    inner.slow.store(0, Ordering::Relaxed);
                    inner.silent.store(0, Ordering::Relaxed);
                    inner.strikes.store(0, Ordering::Relaxed);
                    *state = State::Up(conn);
                }
                return;
            }
            Ok(Err(e)) if e.is_io_error() || e.is_connection_dropped() => {
                return inner.replace(generation);
            }
            Ok(Err(e)) if Error::from(e.clone()).not_primary() => {
                return inner.replace(generation);
            }
            _ => {}
        }
    }
}
