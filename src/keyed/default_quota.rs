//! `DefaultQuota`: a keyed limiter's default quota, which
//! [`KeyedLimiter::set_default_quota`](crate::KeyedLimiter::set_default_quota) changes while
//! checks run.
//!
//! The quota the limiter was made with is a plain field: a limiter whose default never changed
//! reads it after one load of a null pointer. Each change publishes a new quota, never written
//! again, with a `Release` compare-and-swap of that pointer; checks load it with `Acquire`, so
//! the quota they read is whole: never part of one quota and part of another (a torn read),
//! which rewriting a quota in place could give. The quotas are freed with the limiter, never
//! before (a stalled check may still read any of them).
//!
//! Keys keep their TATs through a change (docs/design.md, "A keyed limiter's default quota").

use crate::quota::Quota;
use crate::sync::{AtomicPtr, Ordering, Published};
use core::ptr;

/// A quota set by a change, and the one it replaced (to free them all with the limiter).
struct Node {
    quota: Published<Quota>,
    /// Written before the node is published, never after.
    older: *mut Node,
}

/// The default quota of a keyed limiter.
pub(crate) struct DefaultQuota {
    initial: Quota,
    /// The last quota set; null while none was (`initial` is in force).
    changed: AtomicPtr<Node>,
}

impl DefaultQuota {
    pub(crate) fn new(quota: Quota) -> DefaultQuota {
        DefaultQuota {
            initial: quota,
            changed: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The default quota now.
    #[inline(always)]
    pub(crate) fn get(&self) -> &Quota {
        // Acquire: pairs with the Release in `set`, so the quota it names reads whole.
        let changed = self.changed.load(Ordering::Acquire);
        if changed.is_null() {
            &self.initial
        } else {
            // SAFETY:
            // - every non-null pointer here came from `Box::into_raw` in `set` and is freed
            //   only by `Drop`, with `&mut self`, which outlives `&self`;
            // - its quota was written before the Release that published it (Acquire above).
            unsafe { (*changed).quota.get() }
        }
    }

    /// Makes `quota` the default. Changes that race take effect one after the other.
    pub(crate) fn set(&self, quota: Quota) {
        let node = Box::into_raw(Box::new(Node {
            quota: Published::new(quota),
            older: ptr::null_mut(),
        }));
        // Relaxed: the node is only linked to the one it replaces, published below.
        let mut older = self.changed.load(Ordering::Relaxed);
        loop {
            // SAFETY: `node` is not published yet: only this thread refers to it.
            unsafe { (*node).older = older };
            // Release: publishes the node's quota to the checks that load it (`get`).
            match self.changed.compare_exchange_weak(
                older,
                node,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(now) => older = now,
            }
        }
    }

    /// Deliberately broken [`DefaultQuota::set`]: once a quota was set, rewrites it in place
    /// instead of publishing a new one, so a check can read it while it is written (a torn
    /// quota). Only for the loom models, which must catch it.
    #[cfg(loom)]
    pub(crate) fn set_racy(&self, quota: Quota) {
        let changed = self.changed.load(Ordering::Acquire);
        if changed.is_null() {
            return self.set(quota);
        }
        // SAFETY: as in `get`.
        unsafe { (*changed).quota.overwrite_racy(quota) }
    }
}

impl Drop for DefaultQuota {
    fn drop(&mut self) {
        // Relaxed: `&mut self`, no other thread can reach the nodes.
        let mut node = self.changed.load(Ordering::Relaxed);
        while !node.is_null() {
            // SAFETY:
            // - every node came from `Box::into_raw` in `set` and is linked exactly once;
            // - with `&mut self`, no check can still refer to it.
            let owned = unsafe { Box::from_raw(node) };
            node = owned.older;
        }
    }
}

// SAFETY:
// - the raw `older` pointers are only written before publication and only followed by `Drop`
//   with `&mut self`; the quotas are read-only once published.
unsafe impl Send for DefaultQuota {}
// SAFETY: as for `Send`: shared access only reads published, never-written quotas.
unsafe impl Sync for DefaultQuota {}

impl core::fmt::Debug for DefaultQuota {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.get().fmt(f)
    }
}

impl<K, C> crate::KeyedLimiter<K, C> {
    /// Makes `quota` the default quota: every later check of a key without a quota of its own
    /// ([`with_quota`](crate::KeyedBucket::with_quota),
    /// [`check_key_n_with_quota`](Self::check_key_n_with_quota)) decides under it.
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
