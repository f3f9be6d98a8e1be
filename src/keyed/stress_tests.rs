//! Threads hammer a few keys of a tiny keyed table with every operation that takes or gives
//! back tokens (checks, reservations cancelled, settled or kept, `all_of` over two keys, whose
//! refusals give back what they spent) while idle buckets are evicted, so that keys are
//! inserted, removed and inserted again, often by several threads at once. The clock stands
//! still within a round and moves on between rounds, mostly by less than a bucket depth, so
//! that bookings outlive the rounds they were made in while their tokens refill, and now and
//! then by more, so that every bucket is idle.
//!
//! Every thread logs what it carried out: each admission and the tokens of each booking it
//! kept (a booking cancelled keeps none; one settled keeps what it settled at). At the end the
//! log is replayed per key through an exact token bucket, round by round: every carried-out
//! request must pass. A give-back that returned more than its booking still held, a spend
//! lost or one that landed in a second bucket admits more than the replay does, and fails it.
//!
//! The threads turn on the slot words' pauses (`sync/test_pauses.rs`): at each step of an
//! insert, a removal or a write of a TAT, a thread now and then yields its processor, so that
//! the races between those steps, which a thread rarely loses its processor in the middle of,
//! happen throughout the run.
//!
//! Bookings are given back after a few rounds, out of order; buckets often become idle, are
//! removed, and are inserted again. With a claim made LIVE without the rescan, W of a claim
//! initialised without reading K again, or K retired without freezing W (the loom twins'
//! broken steps), this test fails within seconds.

use super::oracle::Exact;
use crate::sync::test_pauses::pause_now_and_then;
use crate::{all_of, Clock, KeyedLimiter, ManualClock, OverflowPolicy, Quota, Ticket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

const THREADS: usize = 8;
const BURST: u32 = 4;
/// The emission interval: how far the clock moves between rounds.
const T: u64 = 1_000_000_000;
/// Rounds per key of `max_keys` (larger tables see more inserts per round, and the races
/// between them), and operations per thread per round.
const ROUNDS_PER_KEY: usize = 100;
const OPS: usize = 120;
/// The most time the rounds of one table size may take: a bound for a loaded machine, where
/// the pauses (each a yield of the processor) make a round slow; not a measurement.
const BUDGET: Duration = Duration::from_secs(3);

type Keyed = KeyedLimiter<u64, ManualClock>;

/// What every thread shares: the limiter and its clock, and its keys.
struct World {
    limiter: Keyed,
    clock: ManualClock,
    keys: Vec<u64>,
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

/// What a thread carried out: at which time, on which key, how many tokens, and whether they
/// were spent unconditionally (a settle above the booking).
#[derive(Clone, Copy)]
struct Carried {
    at: u64,
    key: usize,
    tokens: u32,
    forced: bool,
}

/// One thread's log, and its bookings not yet given back (with their place in the log).
struct Hand<'w> {
    world: &'w World,
    log: Vec<Carried>,
    bookings: Vec<(usize, Ticket)>,
}

impl Hand<'_> {
    fn carry(&mut self, key: usize, tokens: u32, forced: bool) -> usize {
        let at = self.world.clock.now().as_u64();
        self.log.push(Carried {
            at,
            key,
            tokens,
            forced,
        });
        self.log.len() - 1
    }

    /// Gives one of this thread's bookings back, whole or settled lower.
    fn give_back_one(&mut self, rng: &mut Rng) {
        if self.bookings.is_empty() {
            return;
        }
        let (entry, ticket) = self
            .bookings
            .swap_remove(rng.below(self.bookings.len() as u64) as usize);
        let reservation = self.world.limiter.attach(ticket).expect("this limiter's");
        if rng.below(2) == 0 {
            reservation.cancel();
            self.log[entry].tokens = 0;
        } else {
            let actual = rng.below(u64::from(reservation.cost())) as u32;
            assert!(
                reservation.settle(actual).is_ok(),
                "a settle below its cost"
            );
            self.log[entry].tokens = actual;
        }
    }

    /// One random operation on one or two random keys.
    fn act(&mut self, rng: &mut Rng) {
        let world = self.world;
        let k = rng.below(world.keys.len() as u64) as usize;
        let key = world.limiter.key(&world.keys[k]);
        let cost = 1 + rng.below(u64::from(BURST / 2)) as u32;
        match rng.below(20) {
            0..=2 => {
                if key.check().is_ok() {
                    self.carry(k, 1, false);
                }
            }
            3..=5 => {
                if key.check_n(cost).is_ok() {
                    self.carry(k, cost, false);
                }
            }
            6..=12 => {
                if let Ok(reservation) = key.reserve(cost, Duration::ZERO) {
                    let entry = self.carry(k, cost, false);
                    if rng.below(4) == 0 {
                        let actual = cost + 1 + rng.below(2) as u32;
                        // Refused only when the key's bucket went and no room is left for it:
                        // then nothing was charged.
                        if reservation.settle(actual).is_ok() {
                            self.carry(k, actual - cost, true);
                        }
                    } else {
                        self.bookings.push((entry, reservation.detach()));
                    }
                }
            }
            13..=16 => {
                let j =
                    (k + 1 + rng.below(world.keys.len() as u64 - 1) as usize) % world.keys.len();
                let other = world.limiter.key(&world.keys[j]);
                if all_of(&[(&key, cost), (&other, cost)]).check().is_ok() {
                    self.carry(k, cost, false);
                    self.carry(j, cost, false);
                }
            }
            17 => {
                let _ = key.available();
            }
            _ => {
                world.limiter.evict_idle();
            }
        }
        // Bookings are given back within a few rounds, often out of order.
        while self.bookings.len() > 6 || (!self.bookings.is_empty() && rng.below(40) == 0) {
            self.give_back_one(rng);
        }
    }
}

/// Replays what was carried out on each key through an exact token bucket, in time order (at
/// one instant, the admissions before the unconditional spends): the first request it
/// refuses, if any.
fn replay(world: &World, mut log: Vec<Carried>, quota: &Quota) -> Result<(), String> {
    log.sort_by_key(|c| (c.key, c.at, c.forced));
    for k in 0..world.keys.len() {
        let mut exact = Exact::full(*quota);
        for carried in log.iter().filter(|c| c.key == k && c.tokens > 0) {
            if carried.forced {
                exact.charge(carried.tokens, carried.at);
            } else if !exact.take(carried.tokens, carried.at) {
                return Err(format!(
                    "key {k}: {} tokens carried out at {} ns, beyond the exact bucket",
                    carried.tokens, carried.at
                ));
            }
        }
    }
    Ok(())
}

/// `ROUNDS_PER_KEY * max_keys` rounds on a table of `max_keys` keys (`ceil(max_keys * 5 / 4)`
/// slots) shared by one more key than it has slots.
fn stress(max_keys: usize) {
    let quota = Quota::try_new(Duration::from_nanos(T), BURST).unwrap();
    let clock = ManualClock::new();
    let limiter = KeyedLimiter::<u64, _>::builder(quota)
        .max_keys(max_keys)
        .clock(clock.clone())
        // No bucket that holds tokens is ever forgotten, so every token can be accounted for.
        .overflow(OverflowPolicy::DenyNewKeys)
        .build();
    let keys = (0..limiter.capacity() as u64 + 1).collect::<Vec<_>>();
    let world = World {
        keys,
        limiter,
        clock,
    };
    let barrier = Barrier::new(THREADS);
    let log = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let deadline = Instant::now() + BUDGET;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (world, barrier, log, stop) = (&world, &barrier, &log, &stop);
            s.spawn(move || {
                let seed = 0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1) << 32 ^ max_keys as u64;
                let mut rng = Rng(seed);
                pause_now_and_then(seed.rotate_left(17));
                let mut hand = Hand {
                    world,
                    log: Vec::new(),
                    bookings: Vec::new(),
                };
                for _ in 0..ROUNDS_PER_KEY * max_keys {
                    for _ in 0..OPS {
                        hand.act(&mut rng);
                    }
                    if barrier.wait().is_leader() {
                        // Mostly short steps, with buckets in debt and bookings outstanding;
                        // now and then a long one, after which every bucket is idle.
                        let step = [0, 0, T / 2, T, 2 * T, 10 * T][rng.below(6) as usize];
                        world.clock.advance(Duration::from_nanos(step));
                        if Instant::now() > deadline {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    // The barrier orders the leader's writes before these loads.
                    barrier.wait();
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
                log.lock().unwrap().append(&mut hand.log);
            });
        }
    });
    let log = log.into_inner().unwrap();
    if let Err(e) = replay(&world, log, &quota) {
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
