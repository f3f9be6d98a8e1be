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
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            again.now_within(TICK) > before,
            "the restarted time does not move"
        );
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

    /// In the child: 0 if the TickClock's time moves over 30 ms.
    fn child(clock: &TickClock) -> i32 {
        let before = clock.now_within(TICK);
        std::thread::sleep(Duration::from_millis(30));
        let after = clock.now_within(TICK);
        if after.saturating_duration_since(before) < Duration::from_millis(20) {
            1
        } else {
            0
        }
    }

    /// What a client of `Limiter::new` does: drain it, sleep for the refusal's `retry_after`,
    /// try again. The quota (100 ms deep) is decided on the cached time, whose reading lags at
    /// both checks; without the lag in `retry_after`, about half such retries are refused. Here,
    /// in a process of its own, a retry is refused only if the refresher runs more than a tick
    /// late, which a loaded machine can make happen now and then: hence 18 of 20.
    pub fn a_retry_made_retry_after_later_passes_on_the_cached_time() {
        let mut admitted = 0;
        for _ in 0..20 {
            let limiter = Limiter::new(Quota::per_second(100).with_burst(10));
            // The refusal that ends the draining: a second check could come a tick later.
            let refused = loop {
                if let Err(refused) = limiter.check() {
                    break refused;
                }
            };
            std::thread::sleep(refused.retry_after().expect("can pass"));
            if limiter.check().is_ok() {
                admitted += 1;
            }
        }
        assert!(admitted >= 18, "{admitted} of 20 retries admitted");
    }
}
