//! Quota changes allocate nothing: a limiter changed a million times (an adaptive limit, a
//! configuration reloaded in a loop) holds the same memory as one never changed, and so does a
//! key checked under a quota that changes with each call. Counted by a global allocator that
//! counts the allocations of the thread that asks it to.
//!
//! A binary of its own: its allocator would count every test's allocations otherwise.

use cellrate::{KeyedLimiter, Limiter, ManualClock, Nanos, Quota, QuotaChange};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

/// The system allocator, counting the allocations of threads that set [`COUNTING`].
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATED: Cell<u64> = const { Cell::new(0) };
}

// SAFETY:
// - every call is passed on unchanged to `System`, which upholds `GlobalAlloc`'s contract;
// - the counting touches only const-initialised thread-locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATED.with(|n| n.set(n.get() + 1));
        }
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// How many allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> u64 {
    ALLOCATED.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATED.with(Cell::get)
}

#[test]
fn a_million_quota_changes_allocate_nothing() {
    let (slow, fast) = (Quota::per_second(10), Quota::per_second(1_000));
    let limiter = Limiter::with_clock(slow, ManualClock::new());
    let made = allocations(|| {
        for i in 0..1_000_000u64 {
            let now = Nanos::new(i * 1_000);
            let to = if i % 2 == 0 { fast } else { slow };
            limiter.at(now).set_quota(to, QuotaChange::KeepSpent);
            let _ = limiter.at(now).check();
        }
        // A change to an equal quota, and every rule.
        limiter
            .at(Nanos::new(1 << 40))
            .set_quota(slow, QuotaChange::KeepTime);
        limiter
            .at(Nanos::new(1 << 40))
            .set_quota(slow, QuotaChange::Full);
    });
    assert_eq!(made, 0, "quota changes allocated {made} times");
    assert_eq!(limiter.quota(), slow);
    assert!(limiter.at(Nanos::new(1 << 40)).check().is_ok());
}

#[test]
fn a_booking_across_changes_allocates_nothing_either() {
    let limiter = Limiter::with_clock(Quota::per_second(10), ManualClock::new());
    let made = allocations(|| {
        for i in 0..10_000u64 {
            let now = Nanos::new(i * 1_000_000);
            let booked = limiter.at(now).reserve(1, Duration::ZERO);
            limiter.at(now).set_quota(
                Quota::per_second(10 + (i % 7) as u32),
                QuotaChange::KeepSpent,
            );
            if let Ok(booked) = booked {
                booked.cancel_at(now);
            }
        }
    });
    assert_eq!(made, 0);
}

/// A key checked under a quota that changes with every call: one bucket per quota, each in the
/// table the limiter allocated when it was built.
#[test]
fn a_key_under_a_million_changing_quotas_allocates_nothing() {
    let limiter = KeyedLimiter::<u64, _>::builder(Quota::per_second(10))
        .clock(ManualClock::new())
        .build();
    limiter.at(Nanos::ZERO).check_key(&1).unwrap();
    let made = allocations(|| {
        for i in 0..1_000_000u32 {
            let tier = Quota::per_second(1 + i % 100);
            let _ = limiter
                .at(Nanos::new(u64::from(i)))
                .key(&1)
                .with_quota(tier)
                .check();
        }
    });
    assert_eq!(
        made, 0,
        "checks under changing quotas allocated {made} times"
    );
    assert_eq!(limiter.quota(), Quota::per_second(10), "fixed when built");
    assert_eq!(limiter.len(), 100, "one bucket per quota, none idle yet");
}
