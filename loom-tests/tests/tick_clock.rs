//! Models of `TickClock`'s process-wide time (`cellrate::Ticker`): readers that start the
//! refresher when there is none, a refresher that stops when the last clock is dropped, and
//! restarts. Checked: every reading is a refreshed one, each reader's readings never go
//! backwards, and when everything has finished no time is left cached without a refresher
//! behind it (which would freeze every later reader's time).
//!
//! Time is a shared counter: every exact reading takes the next value. The twin answers a
//! cold read with its own exact reading instead of waiting for the refresher's, and must fail.
#![cfg(loom)]

use cellrate::{Nanos, Ticker};
use cellrate_loom_tests::spawn;
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

    /// A cached read, as `TickClock::now_within` makes it.
    fn read(world: &Arc<World>, waits: bool) -> Nanos {
        let (exact, start) = (|| world.exact(), || World::start(world));
        if waits {
            world.ticker.read_cold(exact, start)
        } else {
            world.ticker.read_cold_without_waiting(exact, start)
        }
    }
}

/// A refresher started by a first clock's read; that clock is dropped (so the refresher
/// stops) while a second clock, on another thread, reads twice (finding the time cached,
/// cleared, or missing, and restarting the refresher as it must). Up to three threads:
/// preemption bound 2.
fn stop_and_restart_model(waits: bool) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(move || {
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
        assert!(!world.ticker.is_running(), "a refresher left running");
        assert_eq!(
            world.ticker.cached(),
            0,
            "a time left with no refresher behind it"
        );
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
