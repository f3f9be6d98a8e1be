//! Random schedules that mix every operation on a limiter and on a keyed limiter (checks, bookings
//! given back or kept, settles above and below, quota changes of every rule while bookings
//! wait, all-or-nothing checks and bookings across limiters and keys, batches, tiers, eviction
//! on tables of one to four keys under both overflow policies and `start_empty`), on readings
//! that lag the true time by up to 5 ms. What was carried out is replayed through the oracle's
//! exact bucket of each bucket (`tests/oracle`): every request must pass.
//!
//! `CELLRATE_REPLAY_SCHEDULES=100000 cargo test --release -p cellrate --test integration
//! replay::` runs a long share (docs/design.md, section 8); `.ci/run` runs the default count.
//! The threaded schedules run four threads on one limiter and on tiny tables.

use crate::oracle::{BookingId, Exact, Log};
use cellrate::{
    all_of, Clock, KeyedLimiter, Limiter, ManualClock, Nanos, OverflowPolicy, Quota, QuotaChange,
    Reservation,
};
use fastrand::Rng;
use std::collections::HashMap;
use std::time::Duration;

/// How many schedules of each kind a run takes.
fn schedules(default: u64) -> u64 {
    std::env::var("CELLRATE_REPLAY_SCHEDULES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// The first schedule of a run (`CELLRATE_REPLAY_FIRST`), to replay one that failed.
fn first_seed() -> u64 {
    std::env::var("CELLRATE_REPLAY_FIRST")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

const STEPS: usize = 300;
const RULES: [QuotaChange; 6] = [
    QuotaChange::KeepSpent,
    QuotaChange::KeepAvailable,
    QuotaChange::Proportional,
    QuotaChange::KeepTime,
    QuotaChange::Full,
    QuotaChange::Empty,
];

fn random_quota(rng: &mut Rng) -> Quota {
    let interval = [1_000_000, 10_000_000, 100_000_000][rng.usize(..3)];
    Quota::try_new(Duration::from_nanos(interval), rng.u32(1..=10)).unwrap()
}

fn wait(rng: &mut Rng) -> Duration {
    [
        Duration::ZERO,
        Duration::from_millis(50),
        Duration::from_secs(2),
    ][rng.usize(..3)]
}

/// The true time, and a reading of it that lags by up to `lag` (and so may go backwards).
struct Time {
    truth: u64,
    lag: u64,
}

impl Time {
    fn step(&mut self, rng: &mut Rng) {
        self.truth += rng.u64(0..=150_000_000);
    }

    fn reading(&self, rng: &mut Rng) -> u64 {
        self.truth.saturating_sub(rng.u64(0..=self.lag))
    }
}

/// A booking not yet given back, with the log of its bucket.
enum Pending<'a> {
    Own(Reservation<'a, ManualClock>, BookingId, usize),
    Joint(Reservation<'a, dyn Clock + 'a>, BookingId, usize),
}

impl Pending<'_> {
    fn id(&self) -> (BookingId, usize) {
        match self {
            Pending::Own(_, id, log) | Pending::Joint(_, id, log) => (*id, *log),
        }
    }

    fn cost(&self) -> u32 {
        match self {
            Pending::Own(r, ..) => r.cost(),
            Pending::Joint(r, ..) => r.cost(),
        }
    }

    fn cancel_at(self, now: Nanos) {
        match self {
            Pending::Own(r, ..) => r.cancel_at(now),
            Pending::Joint(r, ..) => r.cancel_at(now),
        }
    }

    fn settle_at(self, actual: u32, now: Nanos) -> bool {
        match self {
            Pending::Own(r, ..) => r.settle_at(actual, now).is_ok(),
            Pending::Joint(r, ..) => r.settle_at(actual, now).is_ok(),
        }
    }
}

/// Gives back, settles or keeps a random pending booking at the true time.
fn give_back_one(rng: &mut Rng, pending: &mut Vec<Pending<'_>>, logs: &mut [Log], truth: u64) {
    if pending.is_empty() {
        return;
    }
    let booking = pending.swap_remove(rng.usize(..pending.len()));
    let (id, log) = booking.id();
    match rng.u8(..3) {
        0 => {
            booking.cancel_at(Nanos::new(truth));
            logs[log].cancelled(id);
        }
        1 => {
            let actual = rng.u32(0..=2 * booking.cost() + 1);
            if booking.settle_at(actual, Nanos::new(truth)) {
                logs[log].settled(id, actual, truth);
            }
        }
        _ => {} // kept
    }
}

/// One schedule on a limiter `a` (whose quota changes) and a limiter `g` checked with it.
fn limiter_schedule(seed: u64) -> Result<(), String> {
    let mut rng = Rng::with_seed(seed);
    let (qa, qg) = (random_quota(&mut rng), random_quota(&mut rng));
    let a = Limiter::with_clock(qa, ManualClock::new());
    let g = Limiter::with_clock(qg, ManualClock::new());
    let mut logs = [Log::default(), Log::default()];
    let mut pending: Vec<Pending<'_>> = Vec::new();
    let mut time = Time {
        truth: 1_000_000_000,
        lag: [0, 5_000_000][rng.usize(..2)],
    };
    let mut burst = qa.burst();
    for _ in 0..STEPS {
        time.step(&mut rng);
        let now = time.reading(&mut rng);
        let at = Nanos::new(now);
        match rng.u8(..8) {
            0 | 1 => {
                let cost = rng.u32(0..=burst + 1);
                if cost > 0 && a.at(at).check_n(cost).is_ok() {
                    logs[0].checked(cost, now);
                }
            }
            2 => {
                let cost = rng.u32(1..=burst + 1);
                if let Ok(r) = a.at(at).reserve(cost, wait(&mut rng)) {
                    let id = logs[0].booked(cost, r.ready_at().as_u64());
                    pending.push(Pending::Own(r, id, 0));
                }
            }
            3 => give_back_one(&mut rng, &mut pending, &mut logs, time.truth),
            4 => {
                let (to, how) = (random_quota(&mut rng), RULES[rng.usize(..RULES.len())]);
                a.at(Nanos::new(time.truth)).set_quota(to, how);
                logs[0].changed(to, how, time.truth);
                burst = to.burst();
            }
            5 => {
                let (ca, cg) = (rng.u32(0..=burst), rng.u32(0..=qg.burst()));
                if all_of(&[(&a, ca), (&g, cg)]).at(at).check_each().is_ok() {
                    for (log, cost) in [(0, ca), (1, cg)] {
                        if cost > 0 {
                            logs[log].checked(cost, now);
                        }
                    }
                }
            }
            6 => {
                let (ca, cg) = (rng.u32(1..=burst), rng.u32(1..=qg.burst()));
                let max_wait = wait(&mut rng);
                if let Ok(booked) = all_of(&[(&a, ca), (&g, cg)]).at(at).reserve(max_wait) {
                    for (log, r) in booked.into_iter().enumerate() {
                        let id = logs[log].booked(r.cost(), r.ready_at().as_u64());
                        pending.push(Pending::Joint(r, id, log));
                    }
                }
            }
            _ => {
                let cost = rng.u32(1..=qg.burst());
                if g.at(at).check_n(cost).is_ok() {
                    logs[1].checked(cost, now);
                }
            }
        }
    }
    drop(pending); // kept: carried out at their ready times
    for (log, quota) in logs.iter().zip([qa, qg]) {
        log.replay(Exact::full(quota), quota)
            .map_err(|e| format!("seed {seed}: {e}"))?;
    }
    Ok(())
}

#[test]
fn limiter_schedules_replay_through_the_exact_bucket() {
    for seed in first_seed()..schedules(1_000) {
        limiter_schedule(seed).unwrap();
    }
}

/// The buckets a keyed schedule uses: a key under the table's quota or under another (a tier).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct BucketOf {
    key: u64,
    tier: usize,
}

/// One schedule on a table of one to four keys' room, with five keys under two tiers.
fn keyed_schedule(seed: u64) -> Result<(), String> {
    let mut rng = Rng::with_seed(seed);
    // Two quotas, two buckets per key (equal quotas would be one bucket).
    let first = random_quota(&mut rng);
    let tiers = [
        first,
        loop {
            let q = random_quota(&mut rng);
            if q != first {
                break q;
            }
        },
    ];
    let policy = [OverflowPolicy::EvictNearestNew, OverflowPolicy::DenyNewKeys][rng.usize(..2)];
    let start_empty = rng.u8(..4) == 0;
    let table = KeyedLimiter::<u64, _>::builder(tiers[0])
        .max_keys(rng.usize(1..=4))
        .overflow(policy)
        .start_empty(start_empty)
        .clock(ManualClock::new())
        .build();
    let buckets: Vec<BucketOf> = (0..5)
        .flat_map(|key| (0..2).map(move |tier| BucketOf { key, tier }))
        .collect();
    let index: HashMap<BucketOf, usize> =
        buckets.iter().enumerate().map(|(i, b)| (*b, i)).collect();
    let mut logs: Vec<Log> = buckets.iter().map(|_| Log::default()).collect();
    // Under start_empty, a bucket starts empty at its first reading (or later, if the table had
    // no room for it then): the oracle starts it at the earliest, which is looser.
    let mut first_seen: Vec<Option<u64>> = vec![None; buckets.len()];
    let mut pending: Vec<Pending<'_>> = Vec::new();
    let mut time = Time {
        truth: 1_000_000_000,
        lag: [0, 5_000_000][rng.usize(..2)],
    };
    let start = |b: usize, first: &[Option<u64>]| match (start_empty, first[b]) {
        (true, Some(t)) => Exact::empty_at(tiers[buckets[b].tier], t),
        _ => Exact::full(tiers[buckets[b].tier]),
    };
    let mut evictions = 0;
    for _ in 0..STEPS {
        time.step(&mut rng);
        let now = time.reading(&mut rng);
        let at = Nanos::new(now);
        let b = rng.usize(..buckets.len());
        let BucketOf { key, tier } = buckets[b];
        let burst = tiers[tier].burst();
        let handle = table.at(at).key(&key).with_quota(tiers[tier]);
        if first_seen[b].is_none_or(|t| now < t) {
            first_seen[b] = Some(now);
        }
        // Under EvictNearestNew, an operation on several buckets could remove one of them for
        // another and then use it again, which the evictions found after the operation cannot
        // tell: those schedules take one bucket an operation.
        let ops = if policy == OverflowPolicy::EvictNearestNew {
            5
        } else {
            7
        };
        match rng.u8(..ops) {
            0 | 1 => {
                let cost = rng.u32(0..=burst + 1);
                if cost > 0 && handle.check_n(cost).is_ok() {
                    logs[b].checked(cost, now);
                }
            }
            2 => {
                let cost = rng.u32(1..=burst + 1);
                if let Ok(r) = handle.reserve(cost, wait(&mut rng)) {
                    let id = logs[b].booked(cost, r.ready_at().as_u64());
                    pending.push(Pending::Own(r, id, b));
                }
            }
            3 => give_back_one(&mut rng, &mut pending, &mut logs, time.truth),
            4 => {
                table.at(Nanos::new(time.truth)).evict_idle();
            }
            5 => {
                let other = index[&BucketOf {
                    key: rng.u64(0..5),
                    tier: rng.usize(..2),
                }];
                let second = table
                    .at(at)
                    .key(&buckets[other].key)
                    .with_quota(tiers[buckets[other].tier]);
                if first_seen[other].is_none_or(|t| now < t) {
                    first_seen[other] = Some(now);
                }
                let (c1, c2) = (
                    rng.u32(0..=burst),
                    rng.u32(0..=tiers[buckets[other].tier].burst()),
                );
                if other != b && all_of(&[(&handle, c1), (&second, c2)]).check().is_ok() {
                    for (log, cost) in [(b, c1), (other, c2)] {
                        if cost > 0 {
                            logs[log].checked(cost, now);
                        }
                    }
                }
            }
            _ => {
                // A batch under the table's own quota.
                let requests: Vec<(u64, u32)> =
                    (0..3).map(|_| (rng.u64(0..5), rng.u32(0..=2))).collect();
                let refs: Vec<(&u64, u32)> = requests.iter().map(|(k, c)| (k, *c)).collect();
                for (&(k, cost), decision) in requests.iter().zip(table.at(at).check_many(&refs)) {
                    let b = index[&BucketOf { key: k, tier: 0 }];
                    if first_seen[b].is_none_or(|t| now < t) {
                        first_seen[b] = Some(now);
                    }
                    if cost > 0 && decision.is_ok() {
                        logs[b].checked(cost, now);
                    }
                }
            }
        }
        // An overflow eviction forgets a bucket that was not full (the documented policy): find
        // the buckets the table now holds full that the log says are not, and forgive them.
        let overflow = table.stats().overflow_evictions;
        if overflow > evictions {
            let t = time.truth;
            let forgotten: Vec<usize> = (0..buckets.len())
                .filter(|&i| {
                    let h = table.at(Nanos::new(t)).key(&buckets[i].key);
                    let quota = tiers[buckets[i].tier];
                    h.with_quota(quota).available() == quota.burst()
                        && !logs[i].is_full_at(start(i, &first_seen), quota, t)
                })
                .collect();
            if forgotten.len() as u64 > overflow - evictions {
                return Err(format!(
                    "seed {seed}: buckets {forgotten:?} are full in the table, not in the log, \
                     after {} overflow evictions",
                    overflow - evictions
                ));
            }
            for i in forgotten {
                logs[i].forgotten();
            }
            evictions = overflow;
        }
    }
    drop(pending);
    for (i, log) in logs.iter().enumerate() {
        log.replay(start(i, &first_seen), tiers[buckets[i].tier])
            .map_err(|e| format!("seed {seed}, {:?}: {e}", buckets[i]))?;
    }
    Ok(())
}

#[test]
fn keyed_schedules_replay_through_the_exact_bucket_of_each_bucket() {
    for seed in first_seed()..schedules(1_000) {
        keyed_schedule(seed).unwrap();
    }
}

/// What one thread of a threaded schedule carried out, bucket by bucket.
#[derive(Default)]
struct Carried {
    /// (bucket, cost, decided at)
    checks: Vec<(usize, u32, u64)>,
    /// (bucket, cost, ready at, what became of it: None kept or cancelled, Some(lower cost))
    bookings: Vec<(usize, u32, u64, Option<Option<u32>>)>,
}

std::thread_local! {
    /// The readings this thread's limiter operations took, in order.
    static READINGS: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A clock that many threads move forward, and that records each reading in the reading
/// thread's [`READINGS`]: what a threaded schedule logs its decisions at.
#[derive(Clone)]
struct SharedClock(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl Clock for SharedClock {
    fn now(&self) -> Nanos {
        let t = self.0.load(std::sync::atomic::Ordering::SeqCst);
        READINGS.with(|r| r.borrow_mut().push(t));
        Nanos::new(t)
    }
}

/// The readings taken since the last call.
fn readings() -> Vec<u64> {
    READINGS.with(|r| std::mem::take(&mut *r.borrow_mut()))
}

/// The logs of threaded schedules' buckets, from what each thread carried out.
fn logs_of(threads: Vec<Carried>, buckets: usize) -> Vec<Log> {
    let mut logs: Vec<Log> = (0..buckets).map(|_| Log::default()).collect();
    for carried in threads {
        for (b, cost, at) in carried.checks {
            logs[b].checked(cost, at);
        }
        for (b, cost, ready, fate) in carried.bookings {
            let id = logs[b].booked(cost, ready);
            match fate {
                Some(None) => logs[b].cancelled(id),
                Some(Some(lower)) => logs[b].settled(id, lower, ready),
                None => {}
            }
        }
    }
    logs
}

/// One thread of a threaded schedule on the buckets `buckets` (a key and a quota each) of
/// `table`: checks, bookings cancelled, settled lower or kept, all-or-nothing checks of two
/// buckets, evictions; the shared clock moves on.
fn thread_schedule(
    seed: u64,
    clock: &SharedClock,
    table: &KeyedLimiter<u64, SharedClock>,
    buckets: &[(u64, Quota)],
) -> Carried {
    let mut rng = Rng::with_seed(seed);
    let mut carried = Carried::default();
    let mut pending = Vec::new();
    for _ in 0..200 {
        if rng.u8(..3) == 0 {
            clock
                .0
                .fetch_add(rng.u64(0..=20_000_000), std::sync::atomic::Ordering::SeqCst);
        }
        let b = rng.usize(..buckets.len());
        let handle = table.key(&buckets[b].0).with_quota(buckets[b].1);
        let burst = buckets[b].1.burst();
        readings();
        match rng.u8(..6) {
            0 | 1 => {
                let cost = rng.u32(1..=burst);
                if handle.check_n(cost).is_ok() {
                    carried.checks.push((b, cost, readings()[0]));
                }
            }
            2 => {
                let cost = rng.u32(1..=burst);
                if let Ok(r) = handle.reserve(cost, Duration::from_millis(50)) {
                    pending.push((b, r));
                }
            }
            3 if !pending.is_empty() => {
                let (b, r) = pending.swap_remove(rng.usize(..pending.len()));
                let (cost, ready) = (r.cost(), r.ready_at().as_u64());
                readings();
                let fate = match rng.u8(..3) {
                    0 => {
                        r.cancel();
                        Some(None)
                    }
                    1 => {
                        let lower = rng.u32(0..cost);
                        assert!(r.settle(lower).is_ok());
                        // Given back only if the settle's reading found the tokens there.
                        (readings()[0] >= ready).then_some(Some(lower))
                    }
                    _ => None,
                };
                carried.bookings.push((b, cost, ready, fate));
            }
            4 => {
                let other = rng.usize(..buckets.len());
                let second = table.key(&buckets[other].0).with_quota(buckets[other].1);
                let (c1, c2) = (rng.u32(1..=burst), rng.u32(1..=buckets[other].1.burst()));
                if other != b && all_of(&[(&handle, c1), (&second, c2)]).check().is_ok() {
                    let at = readings();
                    carried.checks.push((b, c1, at[0]));
                    carried.checks.push((other, c2, at[1]));
                }
            }
            _ => {
                table.evict_idle();
            }
        }
    }
    for (b, r) in pending {
        carried
            .bookings
            .push((b, r.cost(), r.ready_at().as_u64(), None)); // kept
    }
    carried
}

/// Four threads on a table of one or two keys' room, two keys under two quotas each, under
/// `DenyNewKeys` with keys starting full or empty: every bucket replays exactly.
#[test]
fn threaded_keyed_schedules_replay_through_the_exact_bucket_of_each_bucket() {
    let tiers = [
        Quota::per_second(100).with_burst(3),
        Quota::per_second(10).with_burst(2),
    ];
    let buckets: Vec<(u64, Quota)> = (0..4u64)
        .map(|i| (i / 2, tiers[(i % 2) as usize]))
        .collect();
    for seed in 0..schedules(1_000) / 20 {
        let start_empty = seed % 2 == 1;
        let clock = SharedClock(std::sync::Arc::new(1_000_000_000.into()));
        let table = KeyedLimiter::<u64, _>::builder(tiers[0])
            .max_keys(1 + (seed % 4 / 2) as usize)
            .overflow(OverflowPolicy::DenyNewKeys)
            .start_empty(start_empty)
            .clock(clock.clone())
            .build();
        let carried: Vec<Carried> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|t| {
                    let (clock, table, buckets) = (&clock, &table, &buckets);
                    s.spawn(move || thread_schedule(seed * 4 + t, clock, table, buckets))
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let logs = logs_of(carried, buckets.len());
        for (b, log) in logs.iter().enumerate() {
            let quota = buckets[b].1;
            // Under start_empty a bucket is empty at the schedule's start at the latest.
            let start = if start_empty {
                Exact::empty_at(quota, 1_000_000_000)
            } else {
                Exact::full(quota)
            };
            if let Err(e) = log.replay(start, quota) {
                panic!("seed {seed}, bucket {b}: {e}");
            }
        }
    }
}
