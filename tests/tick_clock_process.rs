//! TickClock's refresher in a whole process: it starts at the first cached read and not before,
//! stops after the last clock is dropped and starts again, and a forked child's time keeps
//! moving; and a client that sleeps for a refusal's `retry_after` on the default clock is then admitted.
//!
//! Its own binary with its own `main` (harness = false): it counts the process's threads by
//! name and forks, which a multi-threaded test harness would disturb.

#[cfg(target_os = "linux")]
fn main() {
    linux::refresher_starts_lazily_and_stops_with_the_last_clock();
    linux::a_forked_child_keeps_a_moving_time();
    linux::a_retry_made_retry_after_later_passes_on_the_cached_time();
    println!("tick_clock_process: ok");
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("tick_clock_process: needs Linux (/proc and fork): skipped");
}

#[cfg(target_os = "linux")]
mod linux {
    use cellrate::{Clock, Limiter, Nanos, Quota, TickClock};
    use std::time::{Duration, Instant};

    const TICK: Nanos = Nanos::new(1_000_000);

    /// The threads of this process named `name`.
    fn threads_named(name: &str) -> usize {
        let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task");
        let named = |entry: &std::fs::DirEntry| {
            let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            comm.trim() == name
        };
        tasks.filter_map(Result::ok).filter(named).count()
    }

    /// Polls until `threads_named("cellrate-tick")` is `count`, failing after 5 s.
    fn wait_for_refreshers(count: usize, failure: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while threads_named("cellrate-tick") != count {
            assert!(Instant::now() < deadline, "{failure}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    pub fn refresher_starts_lazily_and_stops_with_the_last_clock() {
        let clock = TickClock::new();
        clock.now();
        clock.now_within(Nanos::new(999_999));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(
            threads_named("cellrate-tick"),
            0,
            "started before a cached read"
        );

        clock.now_within(TICK);
        wait_for_refreshers(1, "a cached read did not start the refresher");
        let clone = clock.clone();
        drop(clock);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(
            threads_named("cellrate-tick"),
            1,
            "stopped while a clone lives"
        );
        drop(clone);
        wait_for_refreshers(0, "the refresher outlived the last clock");

        let again = TickClock::new();
        let before = again.now_within(TICK);
        wait_for_refreshers(
            1,
            "a cached read after a stop did not restart the refresher",
        );
        assert!(
            moves_past(&again, before, Duration::ZERO),
            "the restarted time does not move"
        );
    }

    /// Whether `clock`'s cached time moves more than `by` past `from` within 5 s: a refresher
    /// kept off the cores by a loaded machine moves it late, never not at all.
    fn moves_past(clock: &TickClock, from: Nanos, by: Duration) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while clock.now_within(TICK).saturating_duration_since(from) <= by {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }

    pub fn a_forked_child_keeps_a_moving_time() {
        let clock = TickClock::new();
        clock.now_within(TICK);
        wait_for_refreshers(1, "a cached read did not start the refresher");
        // SAFETY:
        // - The child only reads clocks, sleeps, starts a thread and leaves with `_exit`; glibc
        //   makes its allocator usable in the child of a multi-threaded parent.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let code = child(&clock);
            // SAFETY: ends the child without running the parent's exit handlers twice.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: `pid` is our child; `status` is a valid place to write its status.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(waited, pid, "waitpid failed");
        assert!(libc::WIFEXITED(status), "the child died: status {status}");
        match libc::WEXITSTATUS(status) {
            0 => {}
            1 => panic!("the child's TickClock time froze after fork"),
            other => panic!("the child exited with {other}"),
        }
    }

    /// In the child: 0 if the TickClock's time moves 20 ms.
    fn child(clock: &TickClock) -> i32 {
        let before = clock.now_within(TICK);
        if !moves_past(clock, before, Duration::from_millis(20)) {
            1
        } else {
            0
        }
    }

    /// What a client of `Limiter::new` does: drain it, sleep for the refusal's `retry_after`,
    /// try again. The quota (100 ms deep) is decided on the cached time, whose reading lags at
    /// both checks; without the lag in `retry_after`, about half such retries are refused. A
    /// retry must pass wherever its reading lagged no more than the clock declares
    /// (`lag_within`); where the refresher ran later than that, as a loaded machine makes it
    /// now and then, it may be refused. Each retry's reading is told from the cached time read
    /// just before and after it (a run in which the time moved in between tells nothing), its
    /// lag from the exact time around it; 20 retries on a reading that lagged no more than
    /// declared are judged.
    pub fn a_retry_made_retry_after_later_passes_on_the_cached_time() {
        let quota = Quota::per_second(100).with_burst(10);
        let tolerance = Nanos::new(quota.replenish_all().as_nanos() as u64 / 16);
        let (mut judged, mut runs) = (0, 0);
        while judged < 20 {
            runs += 1;
            assert!(runs <= 200, "{judged} retries judged in 200 runs");
            let limiter = Limiter::new(quota);
            let clock = limiter.clock();
            let declared = Duration::from_nanos(clock.lag_within(tolerance).as_u64());
            // The refusal that ends the draining: a second check could come a tick later.
            let refused = loop {
                if let Err(refused) = limiter.check() {
                    break refused;
                }
            };
            std::thread::sleep(refused.retry_after().expect("can pass"));
            let (exact_before, reading) = (clock.now(), clock.now_within(tolerance));
            let admitted = limiter.check().is_ok();
            let (moved, exact_after) = (clock.now_within(tolerance) != reading, clock.now());
            let lag_at_most = exact_after.saturating_duration_since(reading);
            if moved || lag_at_most > declared {
                continue;
            }
            let lag_at_least = exact_before.saturating_duration_since(reading);
            assert!(
                admitted,
                "a retry refused on a reading {lag_at_least:?} to {lag_at_most:?} late"
            );
            judged += 1;
        }
    }
}
