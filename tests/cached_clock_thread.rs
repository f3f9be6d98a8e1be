//! CachedClock's refresh thread stops once the last clone is dropped, at once, whatever the
//! resolution. (Its own test binary, one test: it counts threads by name, which other tests
//! making clocks would disturb.)

use cellrate::CachedClock;
use std::time::{Duration, Instant};

/// The threads of this process named like the refresh thread (Linux truncates names to 15
/// bytes), or `None` where `/proc` is not there to tell.
fn refresh_threads() -> Option<usize> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let named = |entry: &std::fs::DirEntry| {
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        comm.trim() == "cellrate-cached"
    };
    Some(tasks.filter_map(Result::ok).filter(named).count())
}

#[test]
fn the_refresh_thread_stops_after_the_last_clone_is_dropped() {
    let Some(at_start) = refresh_threads() else {
        eprintln!("no /proc/self/task here: skipped");
        return;
    };
    assert_eq!(at_start, 0);
    stops_only_after_the_last_clone();
    stops_long_before_its_resolution_is_up();
}

fn stops_only_after_the_last_clone() {
    let clock = CachedClock::new(Duration::from_millis(1)).expect("a thread starts");
    let clone = clock.clone();
    // The new thread names itself once it runs.
    wait_for(Some(1), "the refresh thread did not start");
    drop(clock);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        refresh_threads(),
        Some(1),
        "one thread, still held by the clone"
    );
    drop(clone);
    wait_for(Some(0), "the refresh thread did not stop");
}

/// Polls until [`refresh_threads`] is `count`, failing after 10 s.
fn wait_for(count: Option<usize>, failure: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while refresh_threads() != count {
        assert!(Instant::now() < deadline, "{failure}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn stops_long_before_its_resolution_is_up() {
    let clock = CachedClock::new(CachedClock::MAX_RESOLUTION).expect("a thread starts");
    wait_for(Some(1), "the refresh thread did not start");
    let dropped = Instant::now();
    drop(clock);
    wait_for(Some(0), "the refresh thread did not stop");
    // A thread that slept out its resolution would outlive the clock by a second; a loaded
    // machine delays an unparked thread's exit by far less than half of that.
    assert!(
        dropped.elapsed() < CachedClock::MAX_RESOLUTION / 2,
        "the thread outlived its last clock by {:?}",
        dropped.elapsed()
    );
}
