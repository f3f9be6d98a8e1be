//! The Redis backend when Redis fails: down at start, killed and restarted mid-run, paused past
//! the deadline. The policy answers, failures are counted, nothing panics, service resumes.

use crate::redis_support;

use cellrate::Quota;
use cellrate_redis::{Error, FailurePolicy, RedisLimiter, RedisOptions};
use redis_support::{connected, free_port, redis_available, runtime};
use std::time::{Duration, Instant};

fn options(policy: FailurePolicy) -> RedisOptions {
    RedisOptions::default()
        .failure_policy(policy)
        .deadline(Duration::from_millis(100))
        .connection_timeout(Duration::from_millis(100))
}

#[test]
fn redis_down_at_start_fails_fast_and_the_policy_answers() {
    if !redis_available("redis_down_at_start_fails_fast") {
        return;
    }
    let rt = runtime();
    let url = format!("redis://127.0.0.1:{}", free_port());
    let started = Instant::now();
    let err = rt
        .block_on(RedisLimiter::connect(&url, Quota::per_second(10)))
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
    assert!(!err.outcome_unknown(), "a refused connection ran nothing");
    assert!(err.to_string().contains("refused"), "{err}");
    // A refused connection fails in microseconds; a connect that waited out its timeouts and
    // retries would take seconds more than a loaded machine's stalls.
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "connect stalled"
    );

    let _guard = rt.enter();
    let closed = RedisLimiter::connect_lazy(
        &url,
        Quota::per_second(10),
        options(FailurePolicy::FailClosed),
    )
    .unwrap();
    let started = Instant::now();
    let denied = rt.block_on(closed.check_key("k")).unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_secs(1)));
    assert!(rt
        .block_on(closed.check_key_n("k", 11))
        .unwrap_err()
        .retry_after()
        .is_none());
    let open = RedisLimiter::connect_lazy(
        &url,
        Quota::per_second(10),
        options(FailurePolicy::FailOpen),
    )
    .unwrap();
    assert!(rt.block_on(open.check_key("k")).is_ok());
    assert!(started.elapsed() < Duration::from_secs(2), "calls stalled");
    assert_eq!(closed.stats().failed_closed, 2);
    assert_eq!(open.stats().failed_open, 1);
    assert_eq!(open.stats().allowed + open.stats().denied, 0);
}

#[test]
fn redis_killed_and_restarted_mid_run() {
    let Some((mut server, rt, limiter)) = connected(
        "redis_killed_and_restarted_mid_run",
        Quota::per_hour(1000),
        options(FailurePolicy::FailOpen),
    ) else {
        return;
    };
    for _ in 0..10 {
        assert!(rt.block_on(limiter.check_key("k")).is_ok());
    }
    assert_eq!(limiter.stats().allowed, 10);

    server.kill();
    let started = Instant::now();
    for _ in 0..10 {
        // Fail open: admitted, and counted as such.
        assert!(rt.block_on(limiter.check_key("k")).is_ok());
        assert!(rt.block_on(limiter.try_check_key_n("k", 1)).is_err());
    }
    // 20 calls that each waited out the 100 ms deadline would take 2 s; these fail at once.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "down server stalled calls"
    );
    let down = limiter.stats();
    assert_eq!(down.allowed, 10);
    assert_eq!(down.failed_open, 10);

    server.restart(); // same port, empty (no persistence)
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Ok(allowed)) = rt.block_on(limiter.try_check_key_n("k", 1)) {
            // The restarted server lost the bucket: it is full again, minus this token.
            assert_eq!(allowed.remaining(), 999);
            break;
        }
        assert!(Instant::now() < deadline, "service did not resume");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        rt.block_on(limiter.check_key("k")).unwrap().remaining(),
        998
    );
    assert_eq!(limiter.stats().allowed, 11);
}

#[test]
fn redis_paused_past_the_deadline_is_an_unknown_outcome() {
    let Some((server, rt, limiter)) = connected(
        "redis_paused_past_the_deadline",
        Quota::per_hour(1000),
        options(FailurePolicy::FailClosed),
    ) else {
        return;
    };
    assert!(rt.block_on(limiter.check_key("k")).is_ok());

    server.pause(true);
    let started = Instant::now();
    let denied = rt.block_on(limiter.check_key("k")).unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_secs(1)));
    let err = rt.block_on(limiter.try_check_key_n("k", 1)).unwrap_err();
    assert!(err.outcome_unknown(), "{err:?}");
    let batch = rt.block_on(limiter.check_many(&[("k", 1), ("j", 1)]));
    assert!(batch.iter().all(|answer| answer.is_err()));
    // Three calls of 100 ms deadlines and a batch that finds no connection: well under 2 s
    // on a loaded machine, forever for a call that kept no deadline.
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(2),
        "deadline not kept: {waited:?}"
    );
    let stats = limiter.stats();
    assert_eq!(
        (stats.allowed, stats.denied, stats.failed_open),
        (1, 0, 0),
        "{stats:?}"
    );
    // The two timeouts in a row on a silent connection replaced it; the batch then waited for
    // a new connection that a paused server cannot complete, so it was never sent: known.
    assert_eq!((stats.failed_closed, stats.unknown), (3, 1), "{stats:?}");

    server.pause(false);
    // The calls that timed out were sent: once the server resumes it may run them (that is
    // why they are unknown, and never retried). Service resumes either way.
    let deadline = Instant::now() + Duration::from_secs(10);
    while rt.block_on(limiter.try_check_key_n("k", 0)).is_err() {
        assert!(Instant::now() < deadline, "service did not resume");
        std::thread::sleep(Duration::from_millis(50));
    }
    // 1 spent before the pause, 1 now, and up to 2 more from the calls on "k" that timed out.
    let remaining = rt.block_on(limiter.check_key("k")).unwrap().remaining();
    assert!((996..=998).contains(&remaining), "remaining {remaining}");
}

#[test]
fn the_local_fallback_tells_each_key_of_a_joint_check_its_own_figures() {
    let Some((mut server, rt, limiter)) = connected(
        "local_fallback_joint_figures",
        Quota::per_second(100),
        options(FailurePolicy::Local { servers: 1 }),
    ) else {
        return;
    };
    server.kill();
    let per_ip = Quota::per_minute(1).with_burst(3);
    let global = Quota::per_second(100);
    let limits = [("ip:192.0.2.9", per_ip), ("global", global)];
    for _ in 0..3 {
        let booked = rt.block_on(limiter.reserve_all_of_n(&limits, 1)).unwrap();
        assert!(!booked.from_redis());
        let each: Vec<u32> = booked
            .each()
            .iter()
            .map(|b| b.allowed().remaining())
            .collect();
        // Each key's own level after the spend, not the smallest of all.
        assert!(each[0] <= 2 && each[1] >= 97, "{each:?}");
    }
    let denial = rt
        .block_on(limiter.reserve_all_of_n(&limits, 1))
        .unwrap_err();
    assert!(!denial.from_redis());
    let [ip, all] = denial.each() else {
        panic!("{:?}", denial.each());
    };
    // The client's bucket refused, its next token a minute away; the global one would admit.
    let refused = ip.as_ref().unwrap_err();
    assert_eq!(refused.remaining(), 0);
    let wait = refused.retry_after().unwrap();
    assert!(
        wait > Duration::from_secs(59) && wait <= Duration::from_secs(61),
        "{wait:?}"
    );
    let free = all.as_ref().expect("the global bucket would admit");
    assert!(free.remaining() >= 97, "{free:?}");
    assert!(free.reset_after() <= Duration::from_millis(30), "{free:?}");
    // The combined refusal is the client's.
    assert_eq!(denial.denied().retry_after(), Some(wait));
    assert_eq!(limiter.stats().local_denied, 1);
}
