//! Give-backs on schedules the other files do not take: several give-backs and spends between a
//! booking and its own give-back, settles above a keyed booking after the default quota moved,
//! give-backs of a `start_empty` key whose slot new keys booking ahead want, `all_of` across a
//! `Limiter` and a `KeyedLimiter` around quota changes (deterministic and on threads), bookings
//! on the default clock followed by checks, and paced items cut short after a quota change. Each schedule is
//! run beside `baseline::MutexBucket` where the oracle can take it, and against the exact token
//! bucket of the requests carried out otherwise.

use cellrate::baseline::{MutexBooking, MutexBucket};
use cellrate::{
    all_of, KeyedLimiter, Limiter, ManualClock, Nanos, OverflowPolicy, Quota, QuotaChange,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

fn ms(n: u64) -> Nanos {
    Nanos::new(n * 1_000_000)
}

const NO_WAIT: Duration = Duration::ZERO;

/// A limiter and the oracle on the same quota, fed the same schedule.
struct Pair {
    limiter: Limiter<ManualClock>,
    oracle: MutexBucket<ManualClock>,
}

impl Pair {
    fn new(quota: Quota) -> Pair {
        Pair {
            limiter: Limiter::with_clock(quota, ManualClock::new()),
            oracle: MutexBucket::with_clock(quota, ManualClock::new()),
        }
    }

    fn reserve(
        &self,
        cost: u32,
        at: u64,
    ) -> (cellrate::Reservation<'_, ManualClock>, MutexBooking) {
        let wait = Duration::from_secs(10);
        let r = self.limiter.reserve_n_at(cost, wait, ms(at)).unwrap();
        let b = self
            .oracle
            .reserve_n_at(cost, wait.as_nanos() as u64, ms(at))
            .unwrap();
        (r, b)
    }

    fn check(&self, cost: u32, at: u64) -> bool {
        let l = self.limiter.check_n_at(cost, ms(at)).is_ok();
        let o = self.oracle.check_n_at(cost, ms(at)).is_ok();
        assert_eq!(l, o, "check of {cost} at {at} ms: limiter {l}, oracle {o}");
        l
    }

    fn cancel(&self, (r, b): (cellrate::Reservation<'_, ManualClock>, MutexBooking), at: u64) {
        r.cancel_at(ms(at));
        self.oracle.cancel_at(&b, ms(at));
    }

    /// Both hold the same at every 10 ms from `from` until both are full.
    fn agree_from(&self, from: u64) {
        for t in (from..from + 3_000).step_by(10) {
            assert_eq!(
                self.limiter.available_at(ms(t)),
                self.oracle.available_at(ms(t)),
                "available at {t} ms"
            );
        }
    }
}

/// Two earlier bookings given back, then a spend as large as both, all at one instant: the TAT
/// is back at the value R's booking left, with credit given back since. R holds nothing more
/// than its own 5, and only Y's 5 were carried out.
#[test]
fn two_give_backs_and_a_spend_that_restore_the_tat_do_not_fool_a_later_cancel() {
    let pair = Pair::new(Quota::per_second(10));
    let x1 = pair.reserve(2, 0);
    let x2 = pair.reserve(3, 0);
    let r = pair.reserve(5, 0);
    pair.cancel(x1, 0);
    pair.cancel(x2, 0);
    assert!(pair.check(5, 0)); // Y: the TAT is at R's `after` again
    pair.cancel(r, 0);
    assert_eq!(pair.limiter.available_at(ms(0)), 5, "only Y's 5 are spent");
    pair.agree_from(0);
}

/// Give-backs and spends spread over time between a booking and its cancel: each give-back
/// returns only the part of its booking not yet refilled, and the limiter agrees with the
/// oracle throughout, never holding more than the exact bucket of the requests carried out.
#[test]
fn a_cancel_after_give_backs_and_spends_at_later_times_returns_only_what_it_holds() {
    let pair = Pair::new(Quota::per_second(10));
    let x = pair.reserve(4, 0); // 0..400 ms
    let r = pair.reserve(4, 0); // 400..800 ms
    pair.cancel(x, 200); // X held 200 ms of its 400 by then
    assert!(pair.check(3, 200)); // Y
    assert!(pair.check(1, 300)); // Z
    pair.cancel(r, 300);
    // Only Y (3 at 200 ms) and Z (1 at 300 ms) were carried out: the exact bucket of those two
    // holds 7 at 300 ms. A give-back may leave less, never more.
    let left = pair.limiter.available_at(ms(300));
    assert!(left <= 7, "{left} left where the exact bucket holds 7");
    pair.agree_from(300);
}

/// A booking given back after another booking above it was given back and the bucket spent
/// again up to above both: the give-back sees a TAT above its own end and still returns only
/// its own unrefilled part.
#[test]
fn a_cancel_under_a_respent_bucket_gives_back_only_its_own_part() {
    let pair = Pair::new(Quota::per_second(10));
    let r = pair.reserve(3, 0); // 0..300
    let above = pair.reserve(3, 0); // 300..600
    pair.cancel(above, 100); // on top: exactly back to 300
    assert!(pair.check(6, 100)); // Y: 300..900
    pair.cancel(r, 100);
    // Y's 6 at 100 ms are all that was carried out: 4 left at most.
    let left = pair.limiter.available_at(ms(100));
    assert!(left <= 4, "{left} left where the exact bucket holds 4");
    pair.agree_from(100);
}

/// A keyed booking settled far above its cost after the default quota was lowered: the extra
/// is charged under the default the key now decides under.
#[test]
fn a_keyed_settle_above_the_booking_after_a_default_change_charges_the_live_default() {
    let limiter = KeyedLimiter::<u32, _>::with_clock(Quota::per_second(100), ManualClock::new());
    let booked = limiter.key(&1).reserve_n_at(1, NO_WAIT, ms(0)).unwrap(); // TAT 10 ms
    limiter.set_default_quota(Quota::per_second(10));
    booked.settle_at(50, ms(0));
    assert_eq!(limiter.key(&1).available_at(ms(0)), 0);
    // 49 extra tokens of 100 ms on a TAT of 10 ms: full again at 4.91 s, one token at 4.01 s.
    let refused = limiter.check_key_n_at(&1, 1, ms(0)).unwrap_err();
    assert_eq!(
        refused.retry_after(),
        Some(Duration::from_millis(4_010)),
        "the extra was not charged at the live default's rate"
    );
}

/// The same through a detached ticket attached to the limiter: the ticket remembers that its
/// booking follows the default; one booked under a handle's own quota keeps that quota.
#[test]
fn a_detached_keyed_booking_settled_above_its_cost_follows_the_default_it_was_booked_on() {
    let limiter = KeyedLimiter::<u32, _>::with_clock(Quota::per_second(100), ManualClock::new());
    let ticket = limiter
        .key(&1)
        .reserve_n_at(1, NO_WAIT, ms(0))
        .unwrap()
        .detach();
    let own = Quota::per_second(100);
    let pinned = limiter
        .key(&2)
        .with_quota(&own)
        .reserve_n_at(1, NO_WAIT, ms(0))
        .unwrap()
        .detach();
    limiter.set_default_quota(Quota::per_second(10));
    limiter.attach(ticket).unwrap().settle_at(50, ms(0));
    let refused = limiter.check_key_n_at(&1, 1, ms(0)).unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(4_010)));
    // Key 2's 49 extra at its own 100/s, burst 100: 50 of 100 are left.
    limiter.attach(pinned).unwrap().settle_at(50, ms(0));
    assert_eq!(limiter.key(&2).with_quota(&own).available_at(ms(0)), 50);
}

/// A keyed booking given back after the default quota was raised: what comes back is what the
/// booking held under the quota it was booked under, and the key ends full, as the exact bucket
/// that never saw the booking would be.
#[test]
fn a_keyed_cancel_after_a_default_change_ends_where_the_booking_never_happened() {
    let limiter = KeyedLimiter::<u32, _>::with_clock(Quota::per_second(10), ManualClock::new());
    let booked = limiter.key(&1).reserve_n_at(5, NO_WAIT, ms(0)).unwrap();
    limiter.set_default_quota(Quota::per_second(100));
    booked.cancel_at(ms(0));
    assert_eq!(limiter.key(&1).available_at(ms(0)), 100);
    // Lowered instead: 50 of 100 booked, then 10 a second; the cancel gives back 500 ms.
    let limiter = KeyedLimiter::<u32, _>::with_clock(Quota::per_second(100), ManualClock::new());
    let booked = limiter.key(&1).reserve_n_at(50, NO_WAIT, ms(0)).unwrap();
    limiter.set_default_quota(Quota::per_second(10));
    assert_eq!(limiter.key(&1).available_at(ms(0)), 5);
    booked.cancel_at(ms(0));
    assert_eq!(limiter.key(&1).available_at(ms(0)), 10);
}

/// A two-slot `start_empty` table: key 1, once full, books 5 at 1 s; two new keys book ahead,
/// the first stored in debt, and the second finds no room (key 1 is not full, and no bucket
/// that is not full is removed there): it is refused until key 1 is full again. Key 1 keeps
/// its bucket, and the booking's cancel, its settles below and above its cost, act on it as
/// on the exact bucket.
#[test]
fn a_start_empty_keys_booking_keeps_its_bucket_through_new_keys_booking_ahead() {
    let wait = Duration::from_secs(1);
    for give_back in [0, 1, 2, 3] {
        let limiter = KeyedLimiter::<u32, _>::builder(Quota::per_second(10))
            .max_keys(1)
            .clock(ManualClock::new())
            .start_empty(true)
            .overflow(OverflowPolicy::EvictNearestNew)
            .build();
        let oracle = MutexBucket::with_clock(Quota::per_second(10), ManualClock::new())
            .start_empty_at(true, ms(0));
        assert!(limiter.check_key_at(&1, ms(0)).is_err(), "starts empty");
        let booked = limiter.key(&1).reserve_n_at(5, NO_WAIT, ms(1_000)).unwrap();
        let oracle_booked = oracle.reserve_n_at(5, 0, ms(1_000)).unwrap();
        limiter
            .key(&7)
            .reserve_n_at(1, wait, ms(1_000))
            .unwrap()
            .commit();
        let refused = limiter
            .key(&8)
            .reserve_n_at(1, wait, ms(1_000))
            .unwrap_err();
        assert_eq!(refused.retry_after(), Some(Duration::from_millis(500)));
        assert_eq!(limiter.stats().overflow_evictions, 0);
        match give_back {
            0 => {
                booked.cancel_at(ms(1_100));
                oracle.cancel_at(&oracle_booked, ms(1_100));
            }
            _ => {
                let actual = [0, 0, 2, 15][give_back];
                booked.settle_at(actual, ms(1_100));
                oracle.settle_at(&oracle_booked, actual, ms(1_100));
            }
        }
        for t in 11..40 {
            assert_eq!(
                limiter.key(&1).available_at(ms(t * 100)),
                oracle.available_at(ms(t * 100)),
                "give-back {give_back}, at {} ms",
                t * 100
            );
        }
    }
}

/// `all_of` across a limiter and a key: bookings made together, the limiter's quota changed,
/// then both given back. The limiter's part was booked in a tenure that ended and gives
/// nothing back (as the oracle's does); the key's part comes back whole.
#[test]
fn an_all_of_booking_given_back_after_a_quota_change_of_one_limit() {
    let pair = Pair::new(Quota::per_second(10));
    let keyed = KeyedLimiter::<u32, _>::with_clock(Quota::per_second(10), ManualClock::new());
    let key = keyed.key(&1);
    let both = [&pair.limiter as &dyn cellrate::Limit, &key];
    let booked = all_of(&both).reserve_n_at(4, NO_WAIT, ms(0)).unwrap();
    let oracle_booked = pair.oracle.reserve_n_at(4, 0, ms(0)).unwrap();
    let faster = Quota::per_second(20);
    pair.limiter
        .set_quota_at(faster, QuotaChange::KeepSpent, ms(0));
    pair.oracle
        .set_quota_at(faster, QuotaChange::KeepSpent, ms(0));
    for r in booked {
        r.cancel_at(ms(0));
    }
    pair.oracle.cancel_at(&oracle_booked, ms(0));
    assert_eq!(key.available_at(ms(0)), 10);
    pair.agree_from(0);
    // And a refusal rolled back right after a change: nothing is kept in the limiter.
    assert!(keyed.check_key_n_at(&1, 10, ms(0)).is_ok());
    let left = pair.limiter.available_at(ms(0));
    assert!(all_of(&[&pair.limiter, &key]).check_n_at(1, ms(0)).is_err());
    assert_eq!(pair.limiter.available_at(ms(0)), left);
}

/// Threads: `all_of` spends on a limiter that a key then refuses (every one rolled back), plain
/// checks on the limiter, and quota changes between two bursts of one rate, all on a shared
/// time that only grows. The changes keep the TAT (`KeepSpent` would cap the spending at the
/// smaller burst, which forgets spends by design), so what the limiter admits never exceeds
/// the larger burst plus the refill of the time that passed: a rollback, on the cell it spent
/// in or after that cell moved, never hands back tokens it did not hold.
#[test]
fn all_of_rollbacks_racing_quota_changes_never_admit_beyond_the_limit() {
    let small = Quota::per_second(1_000).with_burst(10);
    let large = Quota::per_second(1_000).with_burst(20);
    let limiter = Limiter::with_clock(small, ManualClock::new());
    let keyed =
        KeyedLimiter::<u32, _>::with_clock(Quota::per_second(1).with_burst(1), ManualClock::new());
    let now = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    keyed.check_key_at(&1, Nanos::ZERO).unwrap(); // the key refuses from now on
    let admitted = AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let key = keyed.key(&1);
            let both = [&limiter as &dyn cellrate::Limit, &key];
            while !stop.load(Ordering::Relaxed) {
                let t = Nanos::new(now.load(Ordering::SeqCst));
                if all_of(&both).check_n_at(2, t).is_ok() {
                    admitted.fetch_add(2, Ordering::SeqCst);
                }
            }
        });
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let t = Nanos::new(now.load(Ordering::SeqCst));
                if limiter.check_n_at(1, t).is_ok() {
                    admitted.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        for step in 0..10_000u64 {
            // 100 µs a step: one token every 10 steps.
            let t = now.fetch_add(100_000, Ordering::SeqCst) + 100_000;
            let quota = if step % 2 == 0 { large } else { small };
            limiter.set_quota_at(quota, QuotaChange::KeepTime, Nanos::new(t));
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = now.load(Ordering::SeqCst);
    let bound = 20 + elapsed / 1_000_000;
    let admitted = admitted.load(Ordering::SeqCst);
    assert!(
        admitted <= bound,
        "{admitted} admitted where at most {bound} fit"
    );
}

/// On the default clock: a booking given back, an `all_of` refused and rolled back, a key's
/// booking kept: the checks that follow see every token the bucket holds.
#[test]
fn give_backs_on_the_default_clock_leave_every_token_to_the_checks() {
    let quota = Quota::per_second(10).with_burst(3);
    for _ in 0..50 {
        let limiter = Limiter::new(quota);
        limiter.reserve_n(2, NO_WAIT).unwrap().cancel();
        assert!(
            limiter.check_n(3).is_ok(),
            "a cancelled booking kept tokens"
        );
        let limiter = Limiter::new(quota);
        let strict = Limiter::new(Quota::per_second(1).with_burst(1));
        strict.check().unwrap();
        assert!(all_of(&[&limiter, &strict]).check_n(1).is_err());
        assert!(limiter.check_n(3).is_ok(), "a rollback kept tokens");
        let keyed = KeyedLimiter::<u32>::new(quota);
        keyed.key(&1).reserve_n(2, NO_WAIT).unwrap().commit();
        assert!(keyed.check_key(&1).is_ok(), "the last token was lost");
        keyed.key(&2).wait_n(1, NO_WAIT).unwrap();
        assert!(keyed.check_key_n(&2, 2).is_ok(), "a wait lost a token");
    }
}

#[cfg(feature = "async")]
mod paced {
    use super::*;
    use cellrate::pace::PaceExt;
    use futures::task::noop_waker_ref;
    use futures::{stream, Stream, StreamExt};
    use std::pin::pin;
    use std::task::{Context, Poll};

    fn poll_next<S: Stream + Unpin>(s: &mut S) -> Poll<Option<S::Item>> {
        s.poll_next_unpin(&mut Context::from_waker(noop_waker_ref()))
    }

    /// A stream waiting for its second item's tokens is dropped after a quota change: its
    /// booking was in the tenure before the change and gives nothing back, as the oracle's.
    /// The change keeps the TAT (900 ms) and doubles the burst, so a give-back made on the
    /// live cell would find the booking on top of the bucket and hand back its 4 tokens.
    #[test]
    fn a_paced_stream_dropped_after_a_quota_change_gives_back_as_the_oracle() {
        let quota = Quota::per_second(10).with_burst(5);
        let clock = ManualClock::new();
        let limiter = Limiter::with_clock(quota, clock.clone());
        let oracle = MutexBucket::with_clock(quota, ManualClock::new());
        {
            let mut paced = pin!(stream::iter([5u32, 4]).paced_by(&limiter, |&c| c));
            assert_eq!(poll_next(&mut paced), Poll::Ready(Some(5)));
            assert!(poll_next(&mut paced).is_pending());
            oracle.check_n_at(5, ms(0)).unwrap();
            let waiting = oracle.reserve_n_at(4, 1_000_000_000, ms(0)).unwrap();
            let changed = Quota::per_second(10).with_burst(10);
            limiter.set_quota_at(changed, QuotaChange::KeepTime, ms(0));
            oracle.set_quota_at(changed, QuotaChange::KeepTime, ms(0));
            oracle.cancel_at(&waiting, ms(0));
        }
        assert_eq!(
            limiter.available_at(ms(0)),
            1,
            "the dropped item's 4 came back"
        );
        for t in (0..1_000).step_by(10) {
            assert_eq!(
                limiter.available_at(ms(t)),
                oracle.available_at(ms(t)),
                "available at {t} ms"
            );
        }
    }

    /// An item above the burst booked part by part, with a change lowering the burst between
    /// two parts: the item still comes, and the limiter ends as the exact bucket.
    #[test]
    fn an_item_above_the_burst_comes_after_a_change_lowers_the_burst() {
        let clock = ManualClock::new();
        let limiter = Limiter::with_clock(Quota::per_second(10).with_burst(4), clock.clone());
        let mut paced = pin!(stream::iter([10u32]).paced_by(&limiter, |&c| c));
        assert!(poll_next(&mut paced).is_pending());
        limiter.set_quota_at(
            Quota::per_second(10).with_burst(2),
            QuotaChange::KeepSpent,
            ms(0),
        );
        let mut came = None;
        for step in 1..=100 {
            clock.advance(Duration::from_millis(50));
            if let Poll::Ready(item) = poll_next(&mut paced) {
                came = Some((item, step * 50));
                break;
            }
        }
        let (item, at) = came.expect("the item never came");
        assert_eq!(item, Some(10));
        // 4 of the burst at 0, the other 6 refilled one every 100 ms: not before 600 ms.
        assert!(at >= 600, "the item came at {at} ms");
        assert_eq!(limiter.available(), 0);
    }
}
