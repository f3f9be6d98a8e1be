//! Batches sized to the deadline, peeks counted apart, and the local deny cache.

use crate::redis_support;

use cellrate::Quota;
use cellrate_redis::{RedisLimiter, RedisOptions};
use redis_support::{connected, RedisServer};
use std::time::Duration;

#[test]
fn redis_a_batch_far_larger_than_the_deadline_allows_is_decided_in_chunks() {
    // 20,000 calls in one pipeline take several times the 500 ms deadline (in a debug build,
    // most of it in the client); chunks of 50 take a few ms each, a hundredth of it, which a
    // loaded machine's stalls do not make up.
    let options = RedisOptions::default()
        .deadline(Duration::from_millis(500))
        .batch_chunk(50);
    let Some((server, rt, limiter)) = connected(
        "redis_a_batch_far_larger_than_the_deadline",
        Quota::per_hour(1),
        options,
    ) else {
        return;
    };
    let keys: Vec<String> = (0..20_000).map(|i| format!("big:{i}")).collect();
    let requests: Vec<(&str, u32)> = keys.iter().map(|k| (k.as_str(), 1)).collect();
    let answers = rt.block_on(limiter.check_many(&requests));
    let stats = limiter.stats();
    assert_eq!(stats.allowed, 20_000, "{stats:?}");
    assert!(answers.iter().all(|a| a.is_ok()));
    // Applied once: asking again refuses.
    let again = rt.block_on(limiter.check_many(&requests[..1000]));
    assert!(again.iter().all(|a| a.is_err()));
    let dbsize: i64 = server.query(&mut redis::cmd("DBSIZE")).unwrap();
    assert_eq!(dbsize, 20_000);
}

#[test]
fn redis_peeks_are_not_counted_as_allowed() {
    let Some((_server, rt, limiter)) = connected(
        "redis_peeks_are_not_counted",
        Quota::per_hour(3),
        redis_support::patient(),
    ) else {
        return;
    };
    assert_eq!(
        rt.block_on(limiter.check_key_n("p", 0))
            .unwrap()
            .remaining(),
        3
    );
    rt.block_on(limiter.check_key("p")).unwrap();
    rt.block_on(limiter.check_many(&[("p", 0), ("q", 0)]));
    let stats = limiter.stats();
    assert_eq!((stats.allowed, stats.peeks), (1, 3), "{stats:?}");
}

/// EVALSHA calls the server has run.
fn evalsha_calls(server: &RedisServer) -> u64 {
    server.commandstat("evalsha", "calls") as u64
}

#[test]
fn redis_the_deny_cache_refuses_abusive_keys_without_a_round_trip() {
    // Two tokens, then one a minute: no token comes back while the test runs.
    let quota = Quota::per_minute(1).with_burst(2);
    let Some((server, rt, limiter)) = connected(
        "redis_the_deny_cache_refuses",
        quota,
        redis_support::patient().deny_cache(1000),
    ) else {
        return;
    };
    let other = rt
        .block_on(RedisLimiter::connect_with(
            &server.url(),
            quota,
            redis_support::patient(),
        ))
        .unwrap();
    let booking = rt.block_on(limiter.reserve_key_n("abuser", 2)).unwrap();
    let first = rt.block_on(limiter.check_key("abuser")).unwrap_err();
    let before = evalsha_calls(&server);
    for _ in 0..100 {
        let denied = rt.block_on(limiter.check_key("abuser")).unwrap_err();
        // Never sooner than Redis said, and what Redis says too.
        assert!(denied.retry_after() <= first.retry_after());
        let peek = rt.block_on(other.check_key_n("abuser", 0)).unwrap();
        assert_eq!(peek.remaining(), 0);
    }
    let batch = rt.block_on(limiter.check_many(&[("abuser", 1), ("fresh", 1)]));
    assert!(batch[0].is_err() && batch[1].is_ok());
    // 100 peeks by the other limiter and one call for "fresh": nothing for the abuser.
    assert_eq!(evalsha_calls(&server) - before, 100 + 1);
    let stats = limiter.stats();
    assert_eq!((stats.denied, stats.cached_denied), (1, 101), "{stats:?}");
    // A give-back through the limiter forgets the key: the next request goes to Redis and
    // passes.
    rt.block_on(booking.settle(1)).unwrap();
    assert!(rt.block_on(limiter.check_key("abuser")).is_ok());

    // Once a token is back in time, the request goes to Redis and passes (a per-call quota of
    // one token per 200 ms).
    let brief = Quota::with_period(Duration::from_millis(200)).with_burst(1);
    assert!(rt
        .block_on(limiter.check_key_n_with_quota("brief", 1, &brief))
        .is_ok());
    let refused = rt
        .block_on(limiter.check_key_n_with_quota("brief", 1, &brief))
        .unwrap_err();
    assert!(rt
        .block_on(limiter.check_key_n_with_quota("brief", 1, &brief))
        .is_err());
    assert_eq!(limiter.stats().cached_denied, 102);
    std::thread::sleep(refused.retry_after().unwrap() + Duration::from_millis(5));
    assert!(rt
        .block_on(limiter.check_key_n_with_quota("brief", 1, &brief))
        .is_ok());
}
