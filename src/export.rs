//! Publishing a named limiter's counts to the `metrics` facade (feature `metrics`): increments
//! of what changed since the last publish, never totals (docs/design.md §11, *Publishing*).

use crate::stats::KeyedStats;
use core::time::Duration;
use metrics::{counter, gauge, histogram, SharedString};
use std::sync::Mutex;

/// A named limiter's side of the facade: its label, and what it has handed over so far.
#[derive(Debug)]
pub(crate) struct Exported {
    label: SharedString,
    published: Mutex<KeyedStats>,
}

impl Exported {
    pub(crate) fn new(name: &str) -> Exported {
        Exported {
            label: SharedString::from(String::from(name)),
            published: Mutex::new(KeyedStats::default()),
        }
    }

    /// The same counts under another name: the counts published stay published, under the
    /// old name, and the next publish hands the new one only what comes after; the keys held
    /// move from the old name's gauge to the new one's at the next publish.
    pub(crate) fn renamed(self, name: &str) -> Exported {
        // Taken, so that the old one's drop takes nothing out of the gauge a second time.
        let published = core::mem::take(&mut *self.lock());
        self.leave(&published);
        Exported {
            label: SharedString::from(String::from(name)),
            published: Mutex::new(KeyedStats {
                keys: 0,
                ..published
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, KeyedStats> {
        // Only counts live behind the lock: a panic while it was held leaves them usable.
        self.published.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands the facade what changed from what was published to `now`: the decision counters
    /// always, and the keyed figures (keys held, evictions, overflow denials) with `keyed`.
    pub(crate) fn publish(&self, now: &KeyedStats, keyed: bool) {
        let mut published = self.lock();
        let l = &self.label;
        let up = |new: u64, old: u64| new.saturating_sub(old);
        counter!("cellrate_allowed_total", "limiter" => l.clone())
            .increment(up(now.allowed, published.allowed));
        counter!("cellrate_denied_total", "limiter" => l.clone())
            .increment(up(now.denied, published.denied));
        counter!("cellrate_peeks_total", "limiter" => l.clone())
            .increment(up(now.peeks, published.peeks));
        if keyed {
            let keys = gauge!("cellrate_keys", "limiter" => l.clone());
            keys.increment(now.keys as f64 - published.keys as f64);
            counter!("cellrate_evictions_total", "limiter" => l.clone(), "reason" => "idle")
                .increment(up(now.idle_evictions, published.idle_evictions));
            counter!("cellrate_evictions_total", "limiter" => l.clone(), "reason" => "overflow")
                .increment(up(now.overflow_evictions, published.overflow_evictions));
            counter!("cellrate_overflow_denials_total", "limiter" => l.clone())
                .increment(up(now.overflow_denials, published.overflow_denials));
        }
        *published = *now;
    }

    /// Takes this limiter's keys out of the gauge: it is dropped or renamed.
    fn leave(&self, published: &KeyedStats) {
        if published.keys > 0 {
            gauge!("cellrate_keys", "limiter" => self.label.clone())
                .decrement(published.keys as f64);
        }
    }

    /// Records how long a wait of this limiter waited for its tokens, in seconds.
    pub(crate) fn record_wait(&self, waited: Duration) {
        histogram!("cellrate_wait_seconds", "limiter" => self.label.clone())
            .record(waited.as_secs_f64());
    }
}

impl Drop for Exported {
    fn drop(&mut self) {
        let published = *self.lock();
        self.leave(&published);
    }
}
