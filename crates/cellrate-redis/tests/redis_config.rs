//! What the Redis backend decides before any round trip: the quota in whole microseconds, the
//! limits of exact Lua arithmetic, key names. No server needed.

use cellrate::{Nanos, Quota};
use cellrate_redis::{Error, RedisLimiter, RedisOptions};
use std::time::Duration;

/// A limiter that never connects (nothing listens on port 1), inside a runtime.
fn offline(quota: Quota) -> Result<RedisLimiter, Error> {
    let options = RedisOptions::default().key_prefix("p:");
    RedisLimiter::connect_lazy("redis://127.0.0.1:1", quota, options)
}

#[tokio::test]
async fn redis_quota_is_rounded_up_to_whole_microseconds() {
    // 3 per second: 333,333,334 ns, kept as 333,334 us (never faster than configured).
    let limiter = offline(Quota::per_second(3)).unwrap();
    assert_eq!(
        limiter.quota().emission_interval(),
        Duration::from_micros(333_334)
    );
    assert_eq!(limiter.quota().burst(), 3);
    // Already on the grid: unchanged.
    let on_grid = Quota::per_second(1000).with_burst(7);
    assert_eq!(offline(on_grid).unwrap().quota(), on_grid);
    // Below a microsecond: one microsecond.
    let fast = offline(Quota::per_second(2_000_000)).unwrap();
    assert_eq!(fast.quota().emission_interval(), Duration::from_micros(1));
}

#[tokio::test]
async fn redis_refuses_what_lua_cannot_compute_exactly() {
    // 3e9 tokens of 1 s: a depth of 3e15 us, past 2^51.
    let huge = Quota::with_period(Duration::from_secs(1)).with_burst(3_000_000_000);
    assert!(matches!(offline(huge), Err(Error::QuotaTooLarge(_))));
    let fits = Quota::with_period(Duration::from_secs(1)).with_burst(2_000_000_000);
    let limiter = offline(fits).unwrap();
    // Past 2^52 us since the epoch (the year 2112): refused before any round trip.
    let err = limiter
        .try_check_key_n_at("k", 1, Nanos::MAX)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::TimeOutOfRange(_)), "{err:?}");
    assert!(!err.outcome_unknown());
    let err = limiter
        .try_check_key_n_with_quota("k", 1, &huge)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::QuotaTooLarge(_)), "{err:?}");
}

#[test]
fn redis_connect_lazy_outside_a_runtime_is_an_error_not_a_panic() {
    let err = offline(Quota::per_second(1)).unwrap_err();
    assert!(err.is_usage(), "{err:?}");
    assert!(err.to_string().contains("Tokio runtime"), "{err}");
}

#[tokio::test]
async fn redis_keys_keep_their_hash_tag_after_the_prefix() {
    let limiter = offline(Quota::per_second(1)).unwrap();
    assert_eq!(limiter.redis_key("{org7}:user3"), "p:{org7}:user3");
    assert_eq!(limiter.redis_key("plain"), "p:plain");
}
