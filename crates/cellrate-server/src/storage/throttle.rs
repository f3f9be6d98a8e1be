//! The buckets of `CL.THROTTLE` and `POST /throttle` in this process: one `cellrate::Limiter`
//! per key, in a bounded table.
//!
//! # One quota per key, the stored time kept
//! A key's limiter holds the quota of the last call that used it. A call with other
//! parameters changes that quota first, keeping the bucket's theoretical arrival time (TAT)
//! as it is, then decides under the new quota: what redis-cell does, since it stores nothing
//! but the TAT and reads it under whatever parameters come. The change is the core's
//! `set_quota(q, QuotaChange::KeepTime)`. One case needs more: that rule reads a TAT lying
//! beyond the bucket's depth (which only an earlier change to a shallower quota leaves, RESP
//! having no bookings) as bookings waiting, and would push it later on a change to a deeper
//! quota. There the key gets a new limiter whose bucket is full at the same instant
//! ([`full_at`]), so the TAT is kept exactly in every case.
//!
//! # Bounds and concurrency
//! Keys are stored as 128-bit fingerprints (SipHash-1-3 under a random key of the process),
//! so an entry's size does not depend on the key's length, and no client can choose keys
//! that collide. The table is split into at most 256 shards of `max_keys / shards` entries,
//! each behind a read-write lock: few enough that the locks stay in cache, many enough that
//! the server's threads rarely meet on one. A call on a key whose quota does not change takes
//! the read lock and decides on the limiter with its lock-free check, so calls on one shard
//! run together; a new key, a quota change or a removal takes the write lock, so no limiter is
//! changed or removed while a call is deciding on it. Each entry keeps its limiter's quota
//! beside its fingerprint, so that a call compares quotas without reading the limiter.
//!
//! A shard that is full when a new key comes first forgets its idle keys (full buckets, which
//! carry nothing: a key forgotten while full comes back full); if none is idle, `--overflow`
//! decides: `deny` refuses the new key until the nearest bucket is full (no key loses its
//! state; the shard remembers that time, so refusals until then cost no scan), `evict`
//! forgets the bucket nearest to full. A scan of a full shard keeps its 32 buckets nearest to
//! full as the next ones to forget, so that a flood of new keys costs a scan per 32 of them;
//! by the time one is forgotten it may have spent again, so "nearest" is as of that scan.

use crate::settings::Overflow;
use crate::storage::embedded::SharedClock;
use crate::throttle::counts::TableFigures;
use crate::throttle::{duration_ns, Decision, Rate, Reply};
use cellrate::{Clock, Limiter, Nanos, Quota, QuotaChange};
use siphasher::sip128::{Hasher128, SipHasher13};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

/// The most shards (module docs).
const MAX_SHARDS: usize = 256;

/// The fewest entries a shard holds before the table has more than one.
const SHARD_KEYS: usize = 1024;

/// The buckets nearest to full a scan keeps to forget next (`--overflow evict`).
const CANDIDATES: usize = 32;

/// The clock of the table's limiters, never read: every operation passes the time of its
/// call (`at`), read once from the server's clock. Were it read, time zero is a stale
/// reading, which never grants a token.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Given;

impl Clock for Given {
    fn now(&self) -> Nanos {
        Nanos::ZERO
    }
}

type Bucket = Limiter<Given>;

/// A fingerprint is already a pseudorandom function of the key: its low half is the hash.
#[derive(Default)]
struct Fingerprint(u64);

impl Hasher for Fingerprint {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u128` is used; any other input is folded in.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u128(&mut self, fp: u128) {
        self.0 = fp as u64;
    }
}

/// A key's entry: its limiter's quota (the same as `bucket.quota()`, changed with it under the
/// write lock) and the limiter, boxed so that an entry is small however big a limiter is.
struct Entry {
    quota: Quota,
    bucket: Box<Bucket>,
}

struct Slots {
    map: HashMap<u128, Entry, BuildHasherDefault<Fingerprint>>,
    /// Under `--overflow deny`: no entry can be forgotten before this time (the nearest
    /// bucket's full time when the shard was last found full), so new keys are refused
    /// without a scan until then.
    no_room_until: u64,
    /// Under `--overflow evict`: the buckets to forget next, nearest to full first.
    candidates: Vec<u128>,
}

/// A shard on cache lines of its own: its lock word is written by every call on it.
#[repr(align(128))]
struct Shard(RwLock<Slots>);

impl Shard {
    fn read(&self) -> RwLockReadGuard<'_, Slots> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Slots> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// One limiter per key, at most `max_keys` (module docs).
pub(crate) struct ThrottleTable {
    shards: Box<[Shard]>,
    per_shard: usize,
    overflow: Overflow,
    clock: SharedClock,
    sip_keys: (u64, u64),
    // Relaxed counts: each read alone by a scrape; the locks order the entries themselves.
    keys: AtomicU64,
    evictions: AtomicU64,
    refusals: AtomicU64,
    quota_changes: AtomicU64,
}

impl ThrottleTable {
    /// A table of at most `max_keys` keys (at least 1) on `clock`.
    pub fn new(max_keys: usize, overflow: Overflow, clock: SharedClock) -> ThrottleTable {
        let max_keys = max_keys.max(1);
        let shards = (max_keys / SHARD_KEYS).next_power_of_two().min(MAX_SHARDS);
        let mut seed = [0u8; 16];
        // Without the OS's randomness, the keys are still unguessable enough to spread keys
        // (the address of a fresh allocation and the time), if not to resist a chosen flood.
        if getrandom::fill(&mut seed).is_err() {
            let fallback = Box::new(0u8);
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos();
            seed = (now ^ (&*fallback as *const u8 as u128)).to_le_bytes();
        }
        let (a, b) = seed.split_at(8);
        ThrottleTable {
            shards: (0..shards)
                .map(|_| {
                    Shard(RwLock::new(Slots {
                        map: HashMap::default(),
                        no_room_until: 0,
                        candidates: Vec::new(),
                    }))
                })
                .collect(),
            per_shard: max_keys.div_ceil(shards),
            overflow,
            clock,
            sip_keys: (
                u64::from_le_bytes(a.try_into().expect("8 bytes")),
                u64::from_le_bytes(b.try_into().expect("8 bytes")),
            ),
            keys: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            refusals: AtomicU64::new(0),
            quota_changes: AtomicU64::new(0),
        }
    }

    fn fingerprint(&self, key: &[u8]) -> u128 {
        let mut hasher = SipHasher13::new_with_keys(self.sip_keys.0, self.sip_keys.1);
        hasher.write(key);
        hasher.finish128().as_u128()
    }

    fn shard(&self, fp: u128) -> &Shard {
        // The high half chooses the shard, the low half the place in it.
        &self.shards[((fp >> 64) as usize) & (self.shards.len() - 1)]
    }

    /// Spends `quantity` in `key`'s bucket under `rate` now, or refuses: the reply.
    pub fn throttle(&self, key: &[u8], rate: &Rate, quantity: u64) -> Reply {
        let now = self.clock.now();
        let fp = self.fingerprint(key);
        let shard = self.shard(fp);
        {
            let slots = shard.read();
            if let Some(entry) = slots.map.get(&fp) {
                if entry.quota == rate.quota {
                    return Reply::new(rate, decide(&entry.bucket, now, quantity));
                }
            }
        }
        let mut slots = shard.write();
        if let Some(entry) = slots.map.get_mut(&fp) {
            if entry.quota != rate.quota {
                change(&mut entry.bucket, rate.quota, now);
                entry.quota = rate.quota;
                self.quota_changes.fetch_add(1, Ordering::Relaxed);
            }
            return Reply::new(rate, decide(&entry.bucket, now, quantity));
        }
        let fresh = Box::new(Limiter::with_clock(rate.quota, Given));
        let decision = decide(&fresh, now, quantity);
        // A call that spent nothing leaves a full bucket: nothing to keep.
        if decision.limited || decision.reset_after_ns == 0 {
            return Reply::new(rate, decision);
        }
        if slots.map.len() >= self.per_shard {
            if let Err(wait_ns) = self.make_room(&mut slots, now) {
                return Reply::no_room(rate, wait_ns);
            }
        }
        let entry = Entry {
            quota: rate.quota,
            bucket: fresh,
        };
        slots.map.insert(fp, entry);
        self.keys.fetch_add(1, Ordering::Relaxed);
        Reply::new(rate, decision)
    }

    /// Frees a slot of a full shard (module docs), or the time until one frees.
    fn make_room(&self, slots: &mut Slots, now: Nanos) -> Result<(), u64> {
        if now.as_u64() < slots.no_room_until {
            self.refusals.fetch_add(1, Ordering::Relaxed);
            return Err(slots.no_room_until - now.as_u64());
        }
        while let Some(fp) = slots.candidates.pop() {
            if let Some(entry) = slots.map.remove(&fp) {
                self.keys.fetch_sub(1, Ordering::Relaxed);
                if ahead(&entry.bucket, now) > 0 {
                    self.evictions.fetch_add(1, Ordering::Relaxed);
                }
                return Ok(());
            }
        }
        let before = slots.map.len();
        slots.map.retain(|_, entry| ahead(&entry.bucket, now) > 0);
        let forgotten = before - slots.map.len();
        self.keys.fetch_sub(forgotten as u64, Ordering::Relaxed);
        if forgotten > 0 {
            return Ok(());
        }
        let mut nearest: Vec<(u64, u128)> = slots
            .map
            .iter()
            .map(|(&fp, entry)| (ahead(&entry.bucket, now), fp))
            .collect();
        let keep = nearest.len().min(CANDIDATES);
        if keep == 0 {
            return Ok(());
        }
        nearest.select_nth_unstable(keep - 1);
        nearest.truncate(keep);
        nearest.sort_unstable();
        let wait_ns = nearest[0].0;
        match self.overflow {
            Overflow::Evict => {
                // Popped from the end: nearest to full last.
                slots.candidates = nearest.iter().rev().map(|&(_, fp)| fp).collect();
                self.make_room(slots, now)
            }
            Overflow::Deny => {
                slots.no_room_until = now.as_u64().saturating_add(wait_ns);
                self.refusals.fetch_add(1, Ordering::Relaxed);
                Err(wait_ns)
            }
        }
    }

    /// The table's counts.
    pub fn stats(&self) -> TableFigures {
        TableFigures {
            keys: self.keys.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            refusals: self.refusals.load(Ordering::Relaxed),
            quota_changes: self.quota_changes.load(Ordering::Relaxed),
        }
    }
}

/// The decision on `bucket` at `now` for `quantity` tokens. A quantity of 0 is a peek, which
/// redis-cell refuses (with the time until it would pass) only for a bucket left past empty by
/// a change to a shallower quota. A quantity beyond a `u32` is more than any bucket holds:
/// refused for good, nothing spent.
fn decide(bucket: &Bucket, now: Nanos, quantity: u64) -> Decision {
    match u32::try_from(quantity) {
        Ok(0) => {
            let ahead = ahead(bucket, now);
            let past_empty = ahead.checked_sub(duration_ns(bucket.quota().replenish_all()));
            Decision {
                limited: past_empty.is_some_and(|by| by > 0),
                reset_after_ns: ahead,
                retry_after_ns: past_empty.filter(|&by| by > 0),
            }
        }
        Ok(cost) => Decision::of(bucket.at(now).check_n(cost)),
        Err(_) => Decision {
            limited: true,
            reset_after_ns: ahead(bucket, now),
            retry_after_ns: None,
        },
    }
}

/// How far the bucket is from full at `now`, in nanoseconds (a peek spends nothing).
fn ahead(bucket: &Bucket, now: Nanos) -> u64 {
    let level = match bucket.at(now).check_n(0) {
        Ok(allowed) => allowed.reset_after(),
        Err(denied) => denied.reset_after(),
    };
    duration_ns(level)
}

/// Moves `bucket` to `quota` at `now`, its TAT kept (module docs).
fn change(bucket: &mut Bucket, quota: Quota, now: Nanos) {
    let old = bucket.quota();
    let ahead = ahead(bucket, now);
    if ahead > duration_ns(old.replenish_all()) && quota.replenish_all() > old.replenish_all() {
        if let Some(rebuilt) = full_at(quota, now, ahead) {
            *bucket = rebuilt;
            return;
        }
    }
    bucket.at(now).set_quota(quota, QuotaChange::KeepTime);
}

/// A limiter under `quota` whose bucket is full at `now + ahead`, however far beyond the
/// quota's depth that lies. A fresh limiter under a carrier quota at least `ahead` deep spends
/// tokens worth exactly `ahead` at an instant just before `now`, then moves to `quota` keeping
/// its TAT (within the carrier's depth, `KeepTime` keeps it as it is). `None` if that instant
/// would fall before the clock's origin (within `ahead / 2^32` of it).
fn full_at(quota: Quota, now: Nanos, ahead: u64) -> Option<Bucket> {
    let step = ahead.div_ceil(u64::from(u32::MAX)).max(1);
    let tokens = ahead.div_ceil(step);
    let carrier = Quota::try_new(Duration::from_nanos(step), u32::try_from(tokens).ok()?).ok()?;
    let start = now.as_u64().checked_sub(tokens * step - ahead)?;
    let bucket = Limiter::with_clock(carrier, Given);
    bucket
        .at(Nanos::new(start))
        .check_n(u32::try_from(tokens).ok()?)
        .ok()?;
    bucket.at(now).set_quota(quota, QuotaChange::KeepTime);
    Some(bucket)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cellrate::ManualClock;
    use std::sync::Arc;

    fn rate(b: i64, c: i64, p: i64) -> Rate {
        Rate::new(b, c, p).unwrap()
    }

    #[test]
    fn full_at_keeps_any_time() {
        let quota = rate(0, 1, 1).quota; // 1 s deep
        for ahead in [1, 999, 1_000_000_000, 7_777_777_777_777, 1 << 61] {
            let now = Nanos::new(1 << 62);
            let bucket = full_at(quota, now, ahead).unwrap();
            assert_eq!(bucket.quota(), quota);
            assert_eq!(super::ahead(&bucket, now), ahead, "{ahead}");
        }
    }

    #[test]
    fn a_full_table_refuses_or_evicts() {
        let clock = ManualClock::new();
        let r = rate(0, 1, 10); // one token, full again 10 s after a spend
        for overflow in [Overflow::Deny, Overflow::Evict] {
            let table = ThrottleTable::new(3, overflow, Arc::new(clock.clone()));
            for key in [b"a", b"b", b"c"] {
                assert!(!table.throttle(key, &r, 1).limited);
                clock.advance(Duration::from_secs(1));
            }
            let fourth = table.throttle(b"d", &r, 1);
            match overflow {
                Overflow::Deny => {
                    // "a" is full again 7 s from now: the new key waits for it.
                    assert_eq!((fourth.limited, fourth.retry_after), (true, 7));
                    assert_eq!(table.stats().refusals, 1);
                    assert!(table.throttle(b"a", &r, 1).limited, "a kept its state");
                }
                Overflow::Evict => {
                    assert!(!fourth.limited);
                    assert_eq!(table.stats().evictions, 1);
                    assert!(!table.throttle(b"a", &r, 1).limited, "a was forgotten");
                }
            }
            clock.advance(Duration::from_secs(10));
            assert!(!table.throttle(b"e", &r, 1).limited, "idle keys make room");
            assert!(table.stats().keys <= 3);
        }
    }
}
