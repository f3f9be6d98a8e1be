//! The most refused keys, approximately, in bounded memory: a Space-Saving table (Metwally,
//! Agrawal and El Abbadi, 2005) updated only on refusals.
//!
//! The table holds at most `capacity` keys with a count each. A refused key already held has
//! its count raised; a new one takes a free entry, or else replaces the entry of the smallest
//! count `m` and starts at `m + 1`. Every key refused more than `total / capacity` times is
//! then held, and each count is over the key's true number by at most the `m` it started at
//! (kept as its `error`). Updates take the table's lock with `try_lock`: a refusal that finds
//! it taken is not counted rather than made to wait, so under contention the counts are low
//! by the refusals skipped. They are for spotting abusers, not for billing.

use std::sync::{Mutex, TryLockError};

/// The largest table: each refusal scans it, so it stays small.
pub(crate) const MAX_TOP_KEYS: usize = 1024;

/// A key and how often it was refused, as the table counts it.
#[derive(Debug)]
struct Entry {
    key: String,
    count: u64,
}

/// The Space-Saving table of refused keys.
#[derive(Debug)]
pub(crate) struct TopKeys {
    capacity: usize,
    entries: Mutex<Vec<Entry>>,
}

impl TopKeys {
    /// A table of at most `capacity` keys, clamped to `1..=MAX_TOP_KEYS`.
    pub(crate) fn new(capacity: usize) -> TopKeys {
        TopKeys {
            capacity: capacity.clamp(1, MAX_TOP_KEYS),
            entries: Mutex::new(Vec::new()),
        }
    }

    /// Counts a refusal of `key`, unless another thread holds the table.
    pub(crate) fn record(&self, key: &str) {
        let mut entries = match self.entries.try_lock() {
            Ok(entries) => entries,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        if let Some(entry) = entries.iter_mut().find(|e| e.key == key) {
            entry.count += 1;
        } else if entries.len() < self.capacity {
            entries.push(Entry {
                key: key.to_owned(),
                count: 1,
            });
        } else if let Some(smallest) = entries.iter_mut().min_by_key(|e| e.count) {
            smallest.key.clear();
            smallest.key.push_str(key);
            smallest.count += 1;
        }
    }

    /// The keys held, most refused first (ties in key order), with their counts.
    pub(crate) fn snapshot(&self) -> Vec<(String, u64)> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let mut top: Vec<_> = entries.iter().map(|e| (e.key.clone(), e.count)).collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        top
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heavy_hitters_are_kept_and_memory_is_bounded() {
        let top = TopKeys::new(4);
        // Two heavy keys among 1,000 distinct light ones, interleaved.
        for i in 0..1_000 {
            top.record("heavy-a");
            if i % 2 == 0 {
                top.record("heavy-b");
            }
            top.record(&format!("light-{i}"));
        }
        let snapshot = top.snapshot();
        assert_eq!(snapshot.len(), 4, "never more than the capacity");
        assert_eq!(snapshot[0], ("heavy-a".to_owned(), 1_000));
        assert_eq!(snapshot[1].0, "heavy-b");
        // Space-Saving never undercounts a held key (with no contention) and overcounts by at
        // most the total over the capacity.
        assert!(
            (500..=500 + 2_500 / 4).contains(&snapshot[1].1),
            "{snapshot:?}"
        );
    }

    #[test]
    fn exact_while_the_keys_fit() {
        let top = TopKeys::new(3);
        for (key, n) in [("a", 3), ("b", 1), ("c", 2)] {
            for _ in 0..n {
                top.record(key);
            }
        }
        let expected = [("a", 3), ("c", 2), ("b", 1)].map(|(k, n)| (k.to_owned(), n));
        assert_eq!(top.snapshot(), expected);
        assert_eq!(TopKeys::new(0).capacity, 1);
        assert_eq!(TopKeys::new(1 << 20).capacity, MAX_TOP_KEYS);
    }
}
