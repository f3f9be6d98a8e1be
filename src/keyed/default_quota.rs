//! `DefaultQuota`: a keyed limiter's default quota, which
//! [`KeyedLimiter::set_default_quota`](crate::KeyedLimiter::set_default_quota) changes while
//! checks run.
//!
//! Two slots take turns: a change writes the quota into the slot that is not current and then
//! makes it current, so a check reads a slot no change is writing, and nothing is allocated
//! however often the default changes. Each slot is read under its version (a sequence lock:
//! odd while a change writes it), so that a check that reads a slot while a later change
//! rewrites it sees the version move and reads again: it never decides on part of one quota
//! and part of another. A check never waits for a change: only a reader overtaken by two
//! changes reads again. Changes are made one at a time.
//!
//! Keys keep their TATs through a change (docs/design.md, "A keyed limiter's default quota").

use crate::engine::bucket_ref::LiveQuota;
use crate::quota::{AtomicQuota, Quota};
use crate::sync::{spin_wait, AtomicU64, Ordering};

/// One slot: a quota and its version.
#[derive(Debug)]
struct Slot {
    version: AtomicU64,
    quota: AtomicQuota,
}

/// The default quota of a keyed limiter.
#[derive(Debug)]
pub(crate) struct DefaultQuota {
    slots: [Slot; 2],
    /// The current slot and its version: `version << 1 | slot`.
    current: AtomicU64,
    /// 1 while a change is made.
    changing: AtomicU64,
}

impl LiveQuota for DefaultQuota {
    fn now(&self) -> Quota {
        self.get()
    }
}

impl DefaultQuota {
    pub(crate) fn new(quota: Quota) -> DefaultQuota {
        let slot = |version| Slot {
            version: AtomicU64::new(version),
            quota: AtomicQuota::new(quota),
        };
        DefaultQuota {
            slots: [slot(2), slot(0)],
            current: AtomicU64::new(2 << 1),
            changing: AtomicU64::new(0),
        }
    }

    /// The default quota now.
    #[inline]
    pub(crate) fn get(&self) -> Quota {
        loop {
            // Acquire: pairs with the Release store in `set`, so the slot's version and quota
            // are those of the change that made it current.
            let current = self.current.load(Ordering::Acquire);
            let slot = &self.slots[(current & 1) as usize];
            if let Some(quota) = slot.quota.read_at(&slot.version, current >> 1) {
                return quota;
            }
            // Overtaken by two changes: read the current slot again.
        }
    }

    /// Makes `quota` the default. Changes that race take effect one after the other.
    pub(crate) fn set(&self, quota: Quota) {
        // Acquire: this change sees the slots as the one before it left them.
        while self
            .changing
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spin_wait();
        }
        // Relaxed: only changes write `current`, one at a time.
        let current = self.current.load(Ordering::Relaxed);
        let index = (1 - (current & 1)) as usize;
        let slot = &self.slots[index];
        let version = slot.quota.write_at(&slot.version, quota);
        // Release: publishes the slot to readers of `current`.
        self.current
            .store(version << 1 | index as u64, Ordering::Release);
        // Release: the next change sees this one's writes.
        self.changing.store(0, Ordering::Release);
    }

    /// Deliberately broken [`DefaultQuota::set`]: rewrites the current slot in place, with no
    /// version, so a check can read it while it is written (a torn quota). Only for the loom
    /// models, which must catch it.
    #[cfg(loom)]
    pub(crate) fn set_racy(&self, quota: Quota) {
        let current = self.current.load(Ordering::Relaxed);
        self.slots[(current & 1) as usize].quota.store(quota);
    }
}

impl<K, C> crate::KeyedLimiter<K, C> {
    /// Makes `quota` the default quota: every later check of a key without a quota of its own
    /// ([`with_quota`](crate::KeyedBucket::with_quota),
    /// [`KeyedBucket::with_quota`](crate::KeyedBucket::with_quota)) decides under it.
    ///
    /// Keys keep their TATs ([`QuotaChange::KeepTime`](crate::QuotaChange::KeepTime)): a TAT
    /// means "full again at this instant" under any quota, so no key gains a token from the
    /// change and no token booked ahead by a reservation is given away. The price is on a
    /// downgrade: a key that had drained the old, deeper bucket waits until it would have been
    /// full under the old quota, at most the old depth (plus what it had booked ahead), before
    /// the new quota applies to it exactly. To carry a key over by another rule, call
    /// `limiter.key(&k).rebase_from(&old, how)` for it.
    ///
    /// ```
    /// use cellrate::{KeyedLimiter, ManualClock, Quota};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let limiter = KeyedLimiter::<u64, _>::with_clock(Quota::per_second(10), clock.clone());
    /// assert!(limiter.check_key_n(&1, 10).is_ok()); // key 1 is full again in 1 s
    /// limiter.set_default_quota(Quota::per_second(100));
    /// assert_eq!(limiter.key(&2).available(), 100); // a new key: the new quota
    /// clock.advance(Duration::from_millis(500)); // 0.5 s to full: 50 tokens of 10 ms
    /// assert_eq!(limiter.key(&1).available(), 50);
    /// ```
    ///
    /// A change allocates nothing, however often the default changes.
    pub fn set_default_quota(&self, quota: Quota) {
        self.quota.set(quota)
    }

    /// Deliberately broken [`set_default_quota`](Self::set_default_quota): publishes the
    /// quota without ordering its write first. Only for the loom models.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn set_default_quota_racy(&self, quota: Quota) {
        self.quota.set_racy(quota)
    }
}
