//! A model of `TickClock`'s process-wide time (the [`Ticker`]): readers that start the
//! refresher when there is none, a refresher that stops when the last clock is dropped, and
//! restarts. Checked: every reading is a refreshed one, each reader's readings never go
//! backwards, and when everything has finished no time is left cached without a refresher
//! behind it (which would freeze every later reader's time).
//!
//! Time is a shared counter: every exact reading takes the next value. The twin answers a
//! cold read with its own exact reading instead of waiting for the refresher's, and must fail.

use super::Ticker;
use crate::loom_tests::spawn;
use crate::nanos::Nanos;
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread::{self, JoinHandle};

/// What the threads of a model share.
struct World {
    ticker: Ticker,
    /// The exact clock: each reading is the next value.
    clock: AtomicU64,
    /// The refreshers started so far, joined at the end.
    refreshers: Mutex<Vec<JoinHandle<()>>>,
}

impl World {
    fn exact(&self) -> u64 {
        // SeqCst: the model's time is one total order of readings.
        self.clock.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Starts a refresher thread (what `start_refresher` does in the crate).
    fn start(world: &Arc<World>) -> bool {
        let w = world.clone();
        let handle = spawn(move || {
            while w.ticker.tick(w.exact()) {
                thread::yield_now();
            }
        });
        world.refreshers.lock().unwrap().push(handle);
        true
    }

    /// A cached read that found no time, as `TickClock::now_within` makes it; `waits: false` is
    /// the twin's.
    fn read(world: &Arc<World>, waits: bool) -> Nanos {
        let (exact, start) = (|| world.exact(), || World::start(world));
        if waits {
            world.ticker.read_cold(exact, start)
        } else {
            read_cold_without_waiting(&world.ticker, exact, start)
        }
    }
}

/// The broken twin of [`Ticker::read_cold`]: it answers a cold read with `exact` at once instead
/// of waiting for the refresher's first reading, so a reader can see a later time than the
/// cached one that follows.
fn read_cold_without_waiting(
    ticker: &Ticker,
    exact: impl Fn() -> u64,
    start: impl FnOnce() -> bool,
) -> Nanos {
    // SeqCst: as in `read_cold`.
    let t = ticker.now.load(Ordering::SeqCst);
    if t != 0 {
        return Nanos::new(t);
    }
    if ticker.claim_start() {
        start();
    }
    Nanos::new(exact())
}

/// A refresher started by a first clock's read; that clock is dropped (so the refresher
/// stops) while a second clock, on another thread, reads twice (finding the time cached,
/// cleared, or missing, and restarting the refresher as it must). Up to three threads:
/// preemption bound 2.
fn stop_and_restart_model(waits: bool) {
    crate::loom_tests::bounded(2).check(move || {
        let world = Arc::new(World {
            ticker: Ticker::new(),
            clock: AtomicU64::new(0),
            refreshers: Mutex::new(Vec::new()),
        });
        world.ticker.add_handle();
        assert!(World::read(&world, true).as_u64() > 0, "a reading of 0");
        let reader = {
            let world = world.clone();
            spawn(move || {
                world.ticker.add_handle();
                let first = World::read(&world, waits);
                let second = World::read(&world, waits);
                assert!(first.as_u64() > 0, "a reading of 0");
                assert!(second >= first, "{second:?} after {first:?}");
                world.ticker.drop_handle();
            })
        };
        world.ticker.drop_handle();
        reader.join().unwrap();
        let refreshers: Vec<_> = world.refreshers.lock().unwrap().drain(..).collect();
        for refresher in refreshers {
            refresher.join().unwrap();
        }
        // SeqCst: the model's final checks, after joins.
        let running = world.ticker.running.load(Ordering::SeqCst);
        assert_eq!(running, 0, "a refresher left running");
        let cached = world.ticker.now.load(Ordering::SeqCst);
        assert_eq!(cached, 0, "a time left with no refresher behind it");
    });
}

#[test]
fn a_stopping_refresher_and_a_new_reader_keep_time_monotonic_and_never_freeze() {
    stop_and_restart_model(true);
}

#[test]
#[should_panic(expected = "after")]
fn broken_a_cold_read_that_answers_its_own_exact_time_goes_backwards() {
    stop_and_restart_model(false);
}
