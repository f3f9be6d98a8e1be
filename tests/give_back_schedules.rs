//! Give-backs on schedules the other files do not take: several give-backs and spends between a
//! booking and its own give-back, settles above keyed bookings (live and detached, under the
//! table's quota and another), give-backs of a `start_empty` key whose slot new keys booking
//! ahead want, `all_of` across a `Limiter` and a `KeyedLimiter` around quota changes
//! (deterministic and on threads), bookings on the default clock followed by checks, and paced
//! items cut short after a quota change. Each schedule is checked against the replay oracle:
//! the limiter never holds more than the exact bucket of what was carried out, and holds
//! exactly as much where nothing came between a booking and its give-back.

use crate::common::ms;
use crate::oracle::{BookingId, Exact, Log};
use cellrate::{
    all_of, KeyedLimiter, Limiter, ManualClock, Nanos, OverflowPolicy, Quota, QuotaChange,
    Reservation,
};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

const NO_WAIT: Duration = Duration::ZERO;

/// A limiter and the log of what was carried out on it.
struct Pair {
    limiter: Limiter<ManualClock>,
    quota: Quota,
    log: RefCell<Log>,
}

impl Pair {
    fn new(quota: Quota) -> Pair {
        Pair {
            limiter: Limiter::with_clock(quota, ManualClock::new()),
            quota,
            log: RefCell::new(Log::default()),
        }
    }

    fn reserve(&self, cost: u32, at: u64) -> (Reservation<'_, ManualClock>, BookingId) {
        let r = self
            .limiter
            .at(ms(at))
            .reserve(cost, Duration::from_secs(10))
            .unwrap();
        let id = self.log.borrow_mut().booked(cost, r.ready_at().as_u64());
        (r, id)
    }

    fn check(&self, cost: u32, at: u64) -> bool {
        let ok = self.limiter.at(ms(at)).check_n(cost).is_ok();
        if ok {
            self.log.borrow_mut().checked(cost, ms(at).as_u64());
        }
        ok
    }

    fn cancel(&self, (r, id): (Reservation<'_, ManualClock>, BookingId), at: u64) {
        r.cancel_at(ms(at));
        self.log.borrow_mut().cancelled(id);
    }

    /// What was carried out replays exactly, and from `from` on the limiter holds exactly what
    /// the exact bucket of it holds, every 10 ms until both are full.
    fn agree_from(&self, from: u64) {
        let log = self.log.borrow();
        assert!(log.replay(Exact::full(self.quota), self.quota).is_ok());
        for t in (from..from + 3_000).step_by(10) {
            assert_eq!(
                self.limiter.at(ms(t)).available(),
                log.tokens_at(Exact::full(self.quota), ms(t).as_u64()),
                "available at {t} ms"
            );
        }
    }

    /// What was carried out replays exactly, and the limiter never holds more than the exact
    /// bucket of it from `from` on.
    fn never_above_from(&self, from: u64) {
        let log = self.log.borrow();
        assert!(log.replay(Exact::full(self.quota), self.quota).is_ok());
        for t in (from..from + 3_000).step_by(10) {
            let (held, exact) = (
                self.limiter.at(ms(t)).available(),
                log.tokens_at(Exact::full(self.quota), ms(t).as_u64()),
            );
            assert!(
                held <= exact,
                "{held} at {t} ms where the exact bucket holds {exact}"
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
    assert_eq!(
        pair.limiter.at(ms(0)).available(),
        5,
        "only Y's 5 are spent"
    );
    pair.agree_from(0);
}

/// Give-backs and spends spread over time between a booking and its cancel: each give-back
/// returns only the part of its booking not yet refilled, and the limiter never holds more
/// than the exact bucket of the requests carried out.
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
    let left = pair.limiter.at(ms(300)).available();
    assert!(left <= 7, "{left} left where the exact bucket holds 7");
    pair.never_above_from(300);
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
    let left = pair.limiter.at(ms(100)).available();
    assert!(left <= 4, "{left} left where the exact bucket holds 4");
    pair.never_above_from(100);
}

/// Keyed bookings settled far above their cost, live and through detached tickets, under the
/// table's quota and another: each extra is charged to the bucket the booking was made in,
/// under that bucket's own quota.
#[test]
fn keyed_settles_above_the_booking_charge_the_bookings_own_bucket() {
    let limiter = KeyedLimiter::<u32, _>::builder(Quota::per_second(100))
        .clock(ManualClock::new())
        .build();
    let now = limiter.at(ms(0));
    let booked = now.key(&1).reserve(1, NO_WAIT).unwrap(); // TAT 10 ms
    booked.settle_at(50, ms(0)).unwrap();
    assert_eq!(now.key(&1).available(), 50);
    let slow = Quota::per_second(10);
    let ticket = now
        .key(&2)
        .with_quota(slow)
        .reserve(1, NO_WAIT)
        .unwrap()
        .detach();
    limiter
        .attach(ticket)
        .unwrap()
        .settle_at(50, ms(0))
        .unwrap();
    // 49 extra tokens of 100 ms on a TAT of 100 ms: full again at 5 s, one token at 4.1 s.
    let refused = now.key(&2).with_quota(slow).check().unwrap_err();
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(4_100)));
    assert_eq!(
        now.key(&2).available(),
        100,
        "the key's bucket under the table's quota"
    );
}

/// A two-slot `start_empty` table: key 1, once full, books 5 at 1 s; two new keys book ahead,
/// the first stored in debt, and the second finds no room (key 1 is not full, and no bucket
/// that is not full is removed there): it is refused until key 1 is full again. Key 1 keeps
/// its bucket, and the booking's cancel, its settles below and above its cost, act on it as
/// on the exact bucket of what was carried out.
#[test]
fn a_start_empty_keys_booking_keeps_its_bucket_through_new_keys_booking_ahead() {
    let wait = Duration::from_secs(1);
    let quota = Quota::per_second(10);
    for give_back in [0, 1, 2, 3] {
        let limiter = KeyedLimiter::<u32, _>::builder(quota)
            .max_keys(1)
            .clock(ManualClock::new())
            .start_empty(true)
            .overflow(OverflowPolicy::EvictNearestNew)
            .build();
        let mut log = Log::default();
        assert!(limiter.at(ms(0)).check_key(&1).is_err(), "starts empty");
        let at = limiter.at(ms(1_000));
        let booked = at.key(&1).reserve(5, NO_WAIT).unwrap();
        let id = log.booked(5, booked.ready_at().as_u64());
        at.key(&7).reserve(1, wait).unwrap().allowed();
        let refused = at.key(&8).reserve(1, wait).unwrap_err();
        assert_eq!(refused.retry_after(), Some(Duration::from_millis(500)));
        assert_eq!(limiter.stats().overflow_evictions, 0);
        let later = ms(1_100);
        match give_back {
            0 => {
                booked.cancel_at(later);
                log.cancelled(id);
            }
            _ => {
                let actual = [0, 0, 2, 15][give_back];
                booked.settle_at(actual, later).unwrap();
                log.settled(id, actual, later.as_u64());
            }
        }
        let start = Exact::empty_at(quota, 0);
        assert!(log.replay(start, quota).is_ok());
        for t in 11..40 {
            let t = ms(t * 100);
            assert_eq!(
                limiter.at(t).key(&1).available(),
                log.tokens_at(start, t.as_u64()),
                "give-back {give_back}, at {t:?}"
            );
        }
    }
}

/// `all_of` across a limiter and a key: bookings made together, the limiter's quota changed,
/// then both given back. The limiter's part was booked before the change and gives nothing
/// back; the key's part comes back whole. Then a refusal rolled back right after a change:
/// nothing is kept in the limiter.
#[test]
fn an_all_of_booking_given_back_after_a_quota_change_of_one_limit() {
    let limiter = Limiter::with_clock(Quota::per_second(10), ManualClock::new());
    let keyed = KeyedLimiter::<u32, _>::builder(Quota::per_second(10))
        .clock(ManualClock::new())
        .build();
    let key = keyed.key(&1);
    let booked = all_of(&[(&limiter, 4), (&key, 4)])
        .at(ms(0))
        .reserve(NO_WAIT)
        .unwrap();
    limiter
        .at(ms(0))
        .set_quota(Quota::per_second(20), QuotaChange::KeepSpent);
    for r in booked {
        r.cancel_at(ms(0));
    }
    assert_eq!(keyed.at(ms(0)).key(&1).available(), 10);
    assert_eq!(limiter.at(ms(0)).available(), 16, "4 of 20 stay spent");
    assert!(keyed.at(ms(0)).key(&1).check_n(10).is_ok());
    let left = limiter.at(ms(0)).available();
    let key = keyed.key(&1);
    assert!(all_of(&[(&limiter, 1), (&key, 1)])
        .at(ms(0))
        .check()
        .is_err());
    assert_eq!(limiter.at(ms(0)).available(), left);
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
    let keyed = KeyedLimiter::<u32, _>::builder(Quota::per_second(1).with_burst(1))
        .clock(ManualClock::new())
        .build();
    let now = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    keyed.at(Nanos::ZERO).check_key(&1).unwrap(); // the key refuses from now on
    let admitted = AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let key = keyed.key(&1);
            while !stop.load(Ordering::Relaxed) {
                let t = Nanos::new(now.load(Ordering::SeqCst));
                if all_of(&[(&limiter, 2), (&key, 2)]).at(t).check().is_ok() {
                    admitted.fetch_add(2, Ordering::SeqCst);
                }
            }
        });
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let t = Nanos::new(now.load(Ordering::SeqCst));
                if limiter.at(t).check().is_ok() {
                    admitted.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        for step in 0..10_000u64 {
            // 100 µs a step: one token every 10 steps.
            let t = now.fetch_add(100_000, Ordering::SeqCst) + 100_000;
            let quota = if step % 2 == 0 { large } else { small };
            limiter
                .at(Nanos::new(t))
                .set_quota(quota, QuotaChange::KeepTime);
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
        limiter.reserve(2, NO_WAIT).unwrap().cancel();
        assert!(
            limiter.check_n(3).is_ok(),
            "a cancelled booking kept tokens"
        );
        let limiter = Limiter::new(quota);
        let strict = Limiter::new(Quota::per_second(1).with_burst(1));
        strict.check().unwrap();
        assert!(all_of(&[(&limiter, 1), (&strict, 1)]).check().is_err());
        assert!(limiter.check_n(3).is_ok(), "a rollback kept tokens");
        let keyed = KeyedLimiter::<u32>::new(quota);
        keyed.key(&1).reserve(2, NO_WAIT).unwrap().allowed();
        assert!(keyed.check_key(&1).is_ok(), "the last token was lost");
        keyed.key(&2).wait(1, NO_WAIT).unwrap();
        assert!(keyed.key(&2).check_n(2).is_ok(), "a wait lost a token");
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
    /// booking was made before the change and gives nothing back. The booking (ready at
    /// 400 ms) was still waiting, so the change takes effect then, the bucket empty under the
    /// new burst of 10 (full at 1.4 s); a give-back made after the change would have handed
    /// back its 4 tokens.
    #[test]
    fn a_paced_stream_dropped_after_a_quota_change_gives_nothing_back() {
        let quota = Quota::per_second(10).with_burst(5);
        let clock = ManualClock::new();
        let limiter = Limiter::with_clock(quota, clock.clone());
        {
            let mut paced = pin!(stream::iter([5u32, 4]).paced_by(&limiter, |&c| c));
            assert_eq!(poll_next(&mut paced), Poll::Ready(Some(5)));
            assert!(poll_next(&mut paced).is_pending());
            let changed = Quota::per_second(10).with_burst(10);
            limiter.at(ms(0)).set_quota(changed, QuotaChange::KeepTime);
        }
        for t in (0..1_500).step_by(10) {
            assert_eq!(
                limiter.at(ms(t)).available(),
                (t.saturating_sub(400) / 100).min(10) as u32,
                "available at {t} ms"
            );
        }
    }

    /// An item above the burst booked part by part, with a change lowering the burst between
    /// two parts: the item still comes, no earlier than the exact bucket allows.
    #[test]
    fn an_item_above_the_burst_comes_after_a_change_lowers_the_burst() {
        let clock = ManualClock::new();
        let limiter = Limiter::with_clock(Quota::per_second(10).with_burst(4), clock.clone());
        let mut paced = pin!(stream::iter([10u32]).paced_by(&limiter, |&c| c));
        assert!(poll_next(&mut paced).is_pending());
        limiter
            .at(ms(0))
            .set_quota(Quota::per_second(10).with_burst(2), QuotaChange::KeepSpent);
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
