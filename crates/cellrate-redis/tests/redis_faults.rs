//! The Redis backend behind a fault-injecting TCP proxy: connections frozen open, reset, or
//! slowed; a server that accepts and never answers. Deadlines are tens of milliseconds.

use crate::proxy;
use crate::redis_support;

use cellrate::{Nanos, Quota};
use cellrate_redis::{Error, FailurePolicy, RedisLimiter, RedisOptions};
use proxy::FaultProxy;
use redis_support::{connect_for_setup, runtime, RedisServer};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis_support::fast_options as options;

/// A server, a proxy in front of it, a runtime and a limiter connected through the proxy, which
/// has made one decision on key `k` (loading the script).
fn proxied(
    test: &str,
    quota: Quota,
    options: RedisOptions,
) -> Option<(
    RedisServer,
    FaultProxy,
    tokio::runtime::Runtime,
    RedisLimiter,
)> {
    let server = RedisServer::start(test)?;
    let proxy = FaultProxy::start(server.port);
    let rt = runtime();
    let limiter = connect_for_setup(&rt, &proxy.url(), quota, options);
    assert!(rt.block_on(limiter.check_key("k")).is_ok());
    Some((server, proxy, rt, limiter))
}

/// Calls `check` every few ms until it gives a decision; how long that took and how many
/// calls failed before. Fails after 10 s: service resumes within a second on a quiet machine.
fn until_decided(rt: &tokio::runtime::Runtime, limiter: &RedisLimiter) -> (Duration, u32) {
    let started = Instant::now();
    let mut failures = 0;
    while rt.block_on(limiter.try_check_key_n("k", 1)).is_err() {
        failures += 1;
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no decision for 10 s: {failures} calls failed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    (started.elapsed(), failures)
}

#[test]
fn redis_a_connection_frozen_open_is_replaced() {
    let Some((_server, proxy, rt, limiter)) = proxied(
        "redis_a_connection_frozen_open_is_replaced",
        Quota::per_hour(1000),
        options(),
    ) else {
        return;
    };

    // Open connections go silent without closing; a new one would answer at once.
    proxy.freeze_open();
    let err = rt.block_on(limiter.try_check_key_n("k", 1)).unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err:?}");
    assert!(err.outcome_unknown());
    let (took, failures) = until_decided(&rt, &limiter);
    // The second silent timeout in a row replaces the connection: the call above and the
    // next one were sent on the frozen connection, and no call after them. (Calls after them
    // may fail too where the machine is loaded, waiting past their 40 ms deadline for the new
    // connection: that is the machine's time, not the connection's silence.)
    let frozen_calls = proxy.sent_while_frozen("EVALSHA");
    assert_eq!(
        frozen_calls, 2,
        "{frozen_calls} calls sent on the frozen connection; {failures} failed after the first ({took:?})"
    );
}

#[test]
fn redis_connections_reset_are_replaced_and_counted_once() {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let hook = {
        let errors = Arc::clone(&errors);
        move |e: &Error| errors.lock().unwrap().push(e.clone())
    };
    let Some((_server, proxy, rt, limiter)) = proxied(
        "redis_connections_reset_are_replaced",
        Quota::per_hour(1000),
        options()
            .failure_policy(FailurePolicy::FailClosed)
            .on_error(hook),
    ) else {
        return;
    };
    proxy.reset_open();
    std::thread::sleep(Duration::from_millis(20));
    let mut failures = 0;
    for _ in 0..20 {
        if rt.block_on(limiter.check_key("k")).is_err() {
            failures += 1;
        }
    }
    let stats = limiter.stats();
    until_decided(&rt, &limiter);
    // At most the call that meets the dead connection fails for it; then a new one is made.
    // (Where the machine is loaded, calls after it may fail too, waiting past their 40 ms
    // deadline for the new connection or for its reply: that is the machine's time.)
    let errors = errors.lock().unwrap();
    let lost = errors
        .iter()
        .filter(|e| matches!(e, Error::ConnectionLost(_)))
        .count();
    assert!(
        lost <= 1,
        "{lost} calls met the reset connection: {errors:?}"
    );
    assert!(proxy.accepted_connections() >= 2, "never connected again");
    // Every call counted once, by what answered it.
    assert_eq!(stats.allowed, 21 - failures, "{stats:?}");
    assert_eq!(stats.failed_closed, failures, "{stats:?}");
}

#[test]
fn redis_slow_replies_are_timeouts_and_service_resumes() {
    let Some((_server, proxy, rt, limiter)) = proxied(
        "redis_slow_replies_are_timeouts",
        Quota::per_hour(1000),
        options(),
    ) else {
        return;
    };
    proxy.delay_replies(Duration::from_millis(60));
    for _ in 0..3 {
        // Every timeout is the one kind, whether the socket or the deadline saw it first.
        let err = rt.block_on(limiter.try_check_key_n("k", 1)).unwrap_err();
        assert!(
            matches!(err, Error::Timeout(_) | Error::Unavailable(_)),
            "{err:?}"
        );
    }
    proxy.delay_replies(Duration::ZERO);
    until_decided(&rt, &limiter);
}

#[test]
fn redis_a_timed_out_chunk_is_unknown_and_the_others_keep_their_answers() {
    let Some((_server, proxy, rt, limiter)) = proxied(
        "redis_a_timed_out_chunk_is_unknown",
        Quota::per_second(1000),
        options().batch_chunk(10),
    ) else {
        return;
    };
    let t = Nanos::new(1_764_115_200_000_000_000);
    rt.block_on(limiter.try_check_key_n_at("warm", 1, t))
        .unwrap()
        .unwrap();
    let keys: Vec<String> = (0..30).map(|i| format!("b{i}")).collect();
    let requests: Vec<(&str, u32)> = keys.iter().map(|k| (k.as_str(), 1)).collect();
    // Each reply to a fresh key is `*2 :1 :1000` in RESP2, 15 bytes: the first chunk's
    // replies pass, then every open connection freezes.
    proxy.freeze_after_reply_bytes(10 * 15);
    let answers = rt
        .block_on(limiter.try_check_many_at(&requests, t))
        .unwrap();
    for answer in &answers[..10] {
        assert_eq!(answer.as_ref().unwrap().unwrap().remaining(), 999);
    }
    for answer in &answers[10..20] {
        let err = answer.as_ref().unwrap_err();
        assert!(err.outcome_unknown(), "{err:?}");
    }
    for answer in &answers[20..] {
        let err = answer.as_ref().unwrap_err();
        assert!(matches!(err, Error::Unavailable(_)), "{err:?}");
        assert!(!err.outcome_unknown(), "never sent");
    }
}

#[test]
fn redis_connect_to_a_hung_server_keeps_the_connection_timeout() {
    if !redis_support::redis_available("redis_connect_to_a_hung_server") {
        return;
    }
    // Accepts connections (the kernel does) and never answers.
    let hung = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://127.0.0.1:{}", hung.local_addr().unwrap().port());
    let rt = runtime();
    // A second as a whole: a step after the TCP connect with a timeout of its own would add a
    // second more, and a loaded machine adds far less than the half second allowed beyond it.
    let timeout = Duration::from_secs(1);
    let started = Instant::now();
    let err = rt
        .block_on(RedisLimiter::connect_with(
            &url,
            Quota::per_second(10),
            RedisOptions::default().connection_timeout(timeout),
        ))
        .unwrap_err();
    let took = started.elapsed();
    assert!(!err.outcome_unknown(), "{err:?}");
    assert!(
        took >= timeout && took < timeout + Duration::from_millis(500),
        "connect took {took:?} against a {timeout:?} timeout"
    );
}

#[test]
fn redis_a_slow_server_keeps_its_connection() {
    let Some((_server, proxy, rt, limiter)) = proxied(
        "redis_a_slow_server_keeps_its_connection",
        Quota::per_hour(1000),
        options(),
    ) else {
        return;
    };
    // Every reply 60 ms late against a 40 ms deadline: late, but replies all the same. Each
    // call that times out is followed by its reply before the next is made (a loaded machine
    // could hold a reply back past the next call's deadline as well, a silence this test is not
    // about). A call whose thread is kept off the cores past its reply gets it (a deadline only
    // says when a call may give up): the calls check something once two in a row, the number
    // that would replace a silent connection, have timed out.
    proxy.delay_replies(Duration::from_millis(60));
    let (mut in_a_row, mut most_in_a_row) = (0, 0);
    for _ in 0..30 {
        let replies = proxy.replies_forwarded();
        match rt.block_on(limiter.try_check_key_n("k", 1)) {
            Err(Error::Timeout(_)) => {
                in_a_row += 1;
                let deadline = Instant::now() + Duration::from_secs(5);
                while proxy.replies_forwarded() == replies {
                    assert!(Instant::now() < deadline, "no late reply in 5 s");
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            // Tripped by the timeouts in a row: failed at once, sent nowhere.
            Err(Error::Unavailable(_)) => {}
            Err(e) => panic!("{e:?}"),
            Ok(_) => in_a_row = 0,
        }
        most_in_a_row = most_in_a_row.max(in_a_row);
    }
    assert!(most_in_a_row >= 2, "no two timeouts in a row");
    assert_eq!(
        proxy.accepted_connections(),
        1,
        "a slow server is not a silent one"
    );
    proxy.delay_replies(Duration::ZERO);
    until_decided(&rt, &limiter);
    assert_eq!(proxy.accepted_connections(), 1);
}

#[test]
fn redis_reconnects_back_off() {
    let Some((mut server, proxy, rt, limiter)) = proxied(
        "redis_reconnects_back_off",
        Quota::per_hour(1000),
        options(),
    ) else {
        return;
    };
    // The server is gone: the proxy accepts each attempt and resets it at once.
    server.kill();
    let before = proxy.accepted_connections();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(1) {
        let _ = rt.block_on(limiter.check_key("k"));
        std::thread::sleep(Duration::from_millis(5));
    }
    // Every 20 ms would be 50; doubling from 20 ms to 320 ms (each pause 50-100 % of it),
    // about 10 at most.
    let attempts = proxy.accepted_connections() - before;
    assert!((2..=12).contains(&attempts), "{attempts} attempts in 1 s");
}

#[test]
fn redis_a_server_that_stalls_scripts_trips_the_breaker() {
    // Deadlines of 200 ms here: after the stall, calls must be decided again, which a loaded
    // machine would not let 40 ms deadlines do (they would trip the breaker once more).
    let pause = Duration::from_secs(3);
    let Some((server, _proxy, rt, limiter)) = proxied(
        "redis_a_server_that_stalls_scripts",
        Quota::per_hour(1000),
        options().deadline(Duration::from_millis(200)),
    ) else {
        return;
    };
    // Scripts wait (a manual failover pauses writers so), PING and ROLE still answer.
    let _: () = server
        .query(
            redis::cmd("CLIENT")
                .arg("PAUSE")
                .arg(pause.as_millis() as u64)
                .arg("WRITE"),
        )
        .unwrap();
    let paused = Instant::now();
    let mut timeouts = 0;
    let mut last = None;
    for _ in 0..20 {
        let err = rt.block_on(limiter.try_check_key_n("k", 1)).unwrap_err();
        match err {
            Error::Timeout(_) => timeouts += 1,
            Error::Unavailable(_) => {}
            other => panic!("{other:?}"),
        }
        last = Some(err);
    }
    // The breaker trips after 5 timeouts in a row: the other calls fail at once, unsent.
    assert!(timeouts <= 5, "{timeouts} calls waited out their deadline");
    let last = last.unwrap().to_string();
    assert!(last.contains("not answering scripts in time"), "{last}");
    assert!(paused.elapsed() < pause, "the calls outlasted the stall");
    // Once scripts run again, the probe closes the breaker: within 5 s of the stall's end, a
    // probe at least every 520 ms (the backoff's cap of 16 probe intervals, 320 ms, and the
    // probe's 200 ms deadline), of which a loaded machine may make a few miss their deadline.
    let (took, _) = until_decided(&rt, &limiter);
    let closed = paused.elapsed() + took;
    assert!(closed < pause + Duration::from_secs(5), "{closed:?}");
}
