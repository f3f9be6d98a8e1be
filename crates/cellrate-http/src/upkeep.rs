//! Idle keys evicted in the background, so that no user writes the loop.

use cellrate::{Clock, KeyedLimiter};
use core::hash::Hash;
use core::time::Duration;
use std::sync::Weak;

/// Starts a thread that calls `evict_idle` on `limiter` every `period` and ends once the
/// limiter is gone (at the first wake-up after it is dropped).
pub(crate) fn evict_idle_every<K, C>(limiter: Weak<KeyedLimiter<K, C>>, period: Duration)
where
    K: Hash + Eq + Send + Sync + 'static,
    C: Clock + Send + Sync + 'static,
{
    let spawned = std::thread::Builder::new()
        .name("cellrate-evict-idle".into())
        .spawn(move || loop {
            std::thread::sleep(period);
            match limiter.upgrade() {
                Some(limiter) => {
                    let removed = limiter.evict_idle();
                    tracing::trace!(removed, "cellrate: idle keys evicted");
                }
                None => return,
            }
        });
    if let Err(e) = spawned {
        // The limit still holds without the thread: idle slots are reused on insert.
        tracing::warn!("cellrate: no thread to evict idle keys: {e}");
    }
}
