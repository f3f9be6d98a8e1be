//! Idle keys evicted in the background, so that no user writes the loop: one thread per
//! limiter, however many layers share it.

use cellrate::{Clock, KeyedLimiter};
use core::any::Any;
use core::hash::Hash;
use core::time::Duration;
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// The limiters that have an eviction thread. A weak reference keeps the allocation (not the
/// limiter) of one that is gone, so no new limiter can take its address while it is listed;
/// the gone are removed at the next start.
static EVICTED: Mutex<Vec<Weak<dyn Any + Send + Sync>>> = Mutex::new(Vec::new());

/// Starts a thread that calls `evict_idle` on `limiter` every `period` and ends once the
/// limiter is gone (at the first wake-up after it is dropped), unless one already runs for
/// it (whose period then holds).
pub(crate) fn evict_idle_every<K, C>(limiter: &Arc<KeyedLimiter<K, C>>, period: Duration)
where
    K: Hash + Eq + Send + Sync + 'static,
    C: Clock + Send + Sync + 'static,
{
    let mut evicted = EVICTED.lock().unwrap_or_else(PoisonError::into_inner);
    evicted.retain(|weak| weak.strong_count() > 0);
    let address = Arc::as_ptr(limiter).cast::<()>();
    if evicted
        .iter()
        .any(|weak| weak.as_ptr().cast::<()>() == address)
    {
        return;
    }
    let weak = Arc::downgrade(limiter);
    let listed: Weak<dyn Any + Send + Sync> = weak.clone();
    let spawned = std::thread::Builder::new()
        .name("cellrate-evict-idle".into())
        .spawn(move || loop {
            std::thread::sleep(period);
            match weak.upgrade() {
                Some(limiter) => {
                    let removed = limiter.evict_idle();
                    tracing::trace!(removed, "cellrate: idle keys evicted");
                }
                None => return,
            }
        });
    match spawned {
        Ok(_) => evicted.push(listed),
        // The limit still holds without the thread: idle slots are reused on insert.
        Err(e) => tracing::warn!("cellrate: no thread to evict idle keys: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cellrate::Quota;

    /// The eviction threads of this process (Linux names a thread by its first 15 bytes).
    fn eviction_threads() -> usize {
        let tasks = std::fs::read_dir("/proc/self/task").expect("Linux /proc");
        tasks
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
            .filter(|name| name.starts_with("cellrate-evict"))
            .count()
    }

    /// The count once it is `want` (a thread names itself once started), waited for up to
    /// 10 s, then again after 200 ms (time for more threads to name themselves).
    fn settled(want: usize) -> usize {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while eviction_threads() != want && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(200));
        eviction_threads()
    }

    // The only test of this binary that starts eviction threads: the counts are its own.
    #[test]
    fn one_thread_per_limiter_however_often_started() {
        let before = eviction_threads();
        let limiter = Arc::new(KeyedLimiter::<u64>::new(Quota::per_second(1)));
        for _ in 0..50 {
            evict_idle_every(&limiter, Duration::from_millis(10));
        }
        assert_eq!(settled(before + 1), before + 1);
        let other = Arc::new(KeyedLimiter::<u64>::new(Quota::per_second(1)));
        evict_idle_every(&other, Duration::from_millis(10));
        assert_eq!(
            settled(before + 2),
            before + 2,
            "another limiter, another thread"
        );
        drop((limiter, other));
        assert_eq!(
            settled(before),
            before,
            "the threads end with their limiters"
        );
    }
}
