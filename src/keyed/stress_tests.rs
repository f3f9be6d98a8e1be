//! Threads hammer a few keys of a tiny keyed table on a frozen clock with every operation that
//! takes or gives back tokens (checks, refunds, reservations cancelled, settled or kept,
//! `all_of` over two keys) while idle buckets are evicted, so that keys are inserted, removed
//! and inserted again, often by several threads at once. Each thread counts the tokens it
//! holds. After every round, with all threads stopped, each key's bucket must hold exactly the
//! burst minus the tokens the threads hold: a refund, rollback or cancellation that missed the
//! key's bucket, or a spend that landed in a second bucket, shows as a difference.
//!
//! The threads turn on the table's pauses (`table::test_hooks`): at each step of an insert, a
//! removal or a write of a TAT, a thread now and then yields its processor, so that the races
//! between those steps, which a thread rarely loses its processor in the middle of, happen
//! throughout the run.
//!
//! The clock never moves, so no token comes back by itself and the only changes are the
//! threads' own. The one answer the threads cannot know is whether a cancellation (or a settle
//! below the booked cost) gave its tokens back: it gives nothing when another booking came
//! after it. Reservations are cancelled or settled lower only in one round of four; their
//! tokens are counted as uncertain, and after such a round the check allows the bucket to hold
//! up to that many tokens less, then refunds what it did keep, so that each round starts
//! exact. The other rounds are checked exactly.
//!
//! Most tokens are given back within an operation or two, so that buckets often become idle,
//! are removed, and are inserted again. With the claim of a duplicate insert taken for the
//! key's absence (as a look-up did before it passed over claims), this test fails within a few
//! seconds.

use super::table::test_hooks::pause_now_and_then;
use crate::{all_of, KeyedLimiter, Limit, ManualClock, Nanos, OverflowPolicy, Quota};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

const THREADS: usize = 8;
const BURST: u32 = 4;
/// The emission interval; the clock never moves, so its size only scales the TATs.
const T: u64 = 1_000_000_000;
/// Rounds per key of `max_keys` (larger tables see more inserts per round, and the races
/// between them), and operations per thread per round.
const ROUNDS_PER_KEY: usize = 40;
const OPS: usize = 120;
/// The most time the rounds of one table size may take: a bound for a loaded machine, where
/// the pauses (each a yield of the processor) make a round slow; not a measurement.
const BUDGET: Duration = Duration::from_secs(3);

type Keyed = KeyedLimiter<u64, ManualClock>;

/// What every thread shares: the limiter, and per key the tokens the threads hold and the
/// tokens cancellations may have kept.
struct World {
    limiter: Keyed,
    keys: Vec<u64>,
    held: Vec<AtomicU32>,
    uncertain: Vec<AtomicU32>,
}

/// A small xorshift generator: each thread's choices are reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One thread's tokens: per key, how many it holds.
struct Hand<'w> {
    world: &'w World,
    held: Vec<u32>,
}

impl Hand<'_> {
    fn take(&mut self, k: usize, n: u32) {
        self.held[k] += n;
        // Relaxed: the counters are read after a barrier, which orders them.
        self.world.held[k].fetch_add(n, Ordering::Relaxed);
    }

    fn give(&mut self, k: usize, n: u32) {
        self.held[k] -= n;
        self.world.held[k].fetch_sub(n, Ordering::Relaxed);
    }

    fn maybe_kept(&self, k: usize, n: u32) {
        self.world.uncertain[k].fetch_add(n, Ordering::Relaxed);
    }

    /// One random operation on one or two random keys; with `cancels`, a reservation may be
    /// cancelled or settled lower.
    fn act(&mut self, rng: &mut Rng, cancels: bool) {
        let world = self.world;
        let k = rng.below(world.keys.len() as u64) as usize;
        let key = world.limiter.key(&world.keys[k]);
        let cost = 1 + rng.below(u64::from(BURST / 2)) as u32;
        match rng.below(20) {
            0..=2 => {
                if key.check().is_ok() {
                    self.take(k, 1);
                }
            }
            3..=5 => {
                if key.check_n(cost).is_ok() {
                    self.take(k, cost);
                }
            }
            6..=10 => {
                let n = self.held[k].min(BURST);
                if n > 0 {
                    key.refund_n(n);
                    self.give(k, n);
                }
            }
            11..=13 => {
                // May book into debt: up to two tokens' wait.
                let wait = Duration::from_nanos(rng.below(3) * T);
                if let Ok(reservation) = key.reserve_n(cost, wait) {
                    // Cancellations only in some rounds: the others are exact.
                    let first = if cancels { 0 } else { 2 };
                    match first + rng.below(4 - first) {
                        0 => {
                            reservation.cancel();
                            self.maybe_kept(k, cost);
                        }
                        1 => {
                            let actual = rng.below(u64::from(cost)) as u32;
                            reservation.settle(actual);
                            self.take(k, actual);
                            self.maybe_kept(k, cost - actual);
                        }
                        2 => {
                            let actual = cost + 1 + rng.below(2) as u32;
                            reservation.settle(actual);
                            self.take(k, actual);
                        }
                        _ => {
                            reservation.commit();
                            self.take(k, cost);
                        }
                    }
                }
            }
            14..=17 => {
                let j =
                    (k + 1 + rng.below(world.keys.len() as u64 - 1) as usize) % world.keys.len();
                let other = world.limiter.key(&world.keys[j]);
                let limits: [&dyn Limit; 2] = [&key, &other];
                if all_of(&limits).check_n(cost).is_ok() {
                    self.take(k, cost);
                    self.take(j, cost);
                }
            }
            18 => {
                let _ = key.available();
            }
            _ => {
                world.limiter.evict_idle();
            }
        }
        // Most tokens are given back soon (module docs).
        if rng.below(4) != 0 {
            for k in 0..world.keys.len() {
                let n = self.held[k].min(BURST);
                if n > 0 {
                    world.limiter.key(&world.keys[k]).refund_n(n);
                    self.give(k, n);
                }
            }
        }
    }
}

/// After a round, with every thread stopped: each key's bucket holds exactly the burst minus
/// the tokens held, less at most the tokens cancellations may have kept. Refunds those, so
/// that the next round starts exact. The first difference found, if any.
fn check_round(world: &World) -> Result<(), String> {
    let zero = Nanos::ZERO;
    for (k, key) in world.keys.iter().enumerate() {
        let held = u64::from(world.held[k].load(Ordering::Relaxed));
        let uncertain = u64::from(world.uncertain[k].swap(0, Ordering::Relaxed));
        let bucket = world.limiter.key(key);
        // A peek reports how far the TAT is ahead of now: the tokens spent, times T.
        let ahead = bucket.check_n_at(0, zero).unwrap().reset_after().as_nanos() as u64;
        let spent = ahead / T;
        if ahead % T != 0 || spent < held || spent > held + uncertain {
            return Err(format!(
                "key {k}: {ahead} ns spent, the threads hold {held} tokens of {T} ns (and \
                 cancellations may have kept {uncertain})"
            ));
        }
        // A refund gives back at most a burst at a time.
        for _ in held..spent {
            bucket.refund_n_at(1, zero);
        }
        let expected = u64::from(BURST).saturating_sub(held) as u32;
        let available = bucket.available_at(zero);
        if available != expected {
            return Err(format!(
                "key {k}: {available} tokens available, not {expected}"
            ));
        }
    }
    Ok(())
}

/// `ROUNDS_PER_KEY * max_keys` rounds on a table of `max_keys` keys (`ceil(max_keys * 5 / 4)` slots) shared by
/// one more key than it has slots.
fn stress(max_keys: usize) {
    let quota = Quota::try_new(Duration::from_nanos(T), BURST).unwrap();
    let limiter = KeyedLimiter::<u64, _>::builder(quota)
        .max_keys(max_keys)
        .clock(ManualClock::new())
        // No bucket that holds tokens is ever forgotten, so every token can be accounted for.
        .overflow(OverflowPolicy::DenyNewKeys)
        .build();
    let keys = (0..limiter.capacity() as u64 + 1).collect::<Vec<_>>();
    let world = World {
        held: keys.iter().map(|_| AtomicU32::new(0)).collect(),
        uncertain: keys.iter().map(|_| AtomicU32::new(0)).collect(),
        keys,
        limiter,
    };
    let barrier = Barrier::new(THREADS);
    // Some(the first difference), or None; and whether to stop after this round.
    let failure = Mutex::new(None);
    let stop = AtomicBool::new(false);
    let deadline = Instant::now() + BUDGET;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (world, barrier, failure, stop) = (&world, &barrier, &failure, &stop);
            s.spawn(move || {
                let seed = 0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1) << 32 ^ max_keys as u64;
                let mut rng = Rng(seed);
                pause_now_and_then(seed.rotate_left(17));
                let mut hand = Hand {
                    world,
                    held: vec![0; world.keys.len()],
                };
                for round in 0..ROUNDS_PER_KEY * max_keys {
                    for _ in 0..OPS {
                        hand.act(&mut rng, round % 4 == 3);
                    }
                    if barrier.wait().is_leader() {
                        if let Err(e) = check_round(world) {
                            *failure.lock().unwrap() = Some(format!("round {round}: {e}"));
                            stop.store(true, Ordering::Relaxed);
                        }
                        if Instant::now() > deadline {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    // The barrier orders the leader's store before these loads.
                    barrier.wait();
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().unwrap() {
        panic!("max_keys {max_keys}: {e}");
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "millions of steps; tests/keyed_churn.rs is the churn sized for Miri"
)]
fn every_token_is_accounted_for_in_tiny_tables() {
    for max_keys in 1..=6 {
        stress(max_keys);
    }
}
