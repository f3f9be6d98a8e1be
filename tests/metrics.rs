//! The metrics facade (feature `metrics`): every counter, gauge and histogram a named limiter
//! publishes, captured with metrics-util's debugging recorder, with exact values after a
//! scripted sequence on a ManualClock.
#![cfg(feature = "metrics")]

use crate::metrics_support;

use cellrate::{KeyedLimiter, Limiter, ManualClock, MonotonicClock, Nanos, OverflowPolicy, Quota};
use metrics_support::{captured, counters, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

/// 2 tokens a second, burst 3.
fn quota() -> Quota {
    Quota::per_second(2).with_burst(3)
}

#[test]
fn a_named_limiter_publishes_its_decisions() {
    let clock = ManualClock::new();
    let limiter = Limiter::with_clock(quota(), clock.clone()).named("api");
    for _ in 0..3 {
        limiter.check().unwrap();
    }
    limiter.check().unwrap_err();
    limiter.check_n(0).unwrap();
    limiter.check_n(9).unwrap_err();
    // Recorded before the publish, so the checks themselves sent nothing.
    let ((), before) = captured(|| {
        limiter.check().unwrap_err();
    });
    assert!(before.is_empty(), "a check called the facade: {before:?}");
    let ((), series) = captured(|| limiter.publish_metrics());
    let expected = BTreeMap::from([
        ("cellrate_allowed_total{limiter=api}", 3),
        ("cellrate_denied_total{limiter=api}", 3),
        ("cellrate_peeks_total{limiter=api}", 1),
    ]);
    assert_eq!(counters(&series), expected);
    assert_eq!(series.len(), 3, "no other series: {series:?}");
}

#[test]
fn an_unnamed_limiter_publishes_nothing() {
    let limiter = Limiter::with_clock(quota(), ManualClock::new());
    let keyed = KeyedLimiter::<u64, _>::with_clock(quota(), ManualClock::new());
    limiter.check().unwrap();
    keyed.check_key(&1).unwrap();
    let ((), series) = captured(|| {
        limiter.publish_metrics();
        keyed.publish_metrics();
        limiter.wait_n(1, Duration::ZERO).unwrap();
        keyed.key(&1).wait_n(1, Duration::ZERO).unwrap();
    });
    assert!(series.is_empty(), "{series:?}");
}

#[test]
fn a_named_keyed_limiter_publishes_keys_evictions_and_overflows() {
    // 8 keys' worth of slots, DenyNewKeys: the keys past the capacity are denied for lack of
    // room; nothing is idle before 1 µs.
    let slow = Quota::try_new(Duration::from_micros(1), 1).unwrap();
    let limiter = KeyedLimiter::<u64, _>::builder(slow)
        .max_keys(8)
        .clock(ManualClock::new())
        .overflow(OverflowPolicy::DenyNewKeys)
        .build()
        .named("per-user");
    let slots = limiter.capacity() as u64;
    for k in 0..slots + 3 {
        let _ = limiter.check_key_n_at(&k, 1, Nanos::new(k));
    }
    let ((), full) = captured(|| limiter.publish_metrics());
    // At 1 µs + slots ns every bucket is full again: all of them are swept.
    assert_eq!(
        limiter.evict_idle_at(Nanos::new(1_000 + slots)),
        slots as usize
    );
    let ((), swept) = captured(|| limiter.publish_metrics());

    let l = "limiter=per-user";
    assert_eq!(
        full.get(&format!("cellrate_keys{{{l}}}")),
        Some(&Value::Gauge(slots as f64))
    );
    let expected = |idle: u64| {
        BTreeMap::from([
            (format!("cellrate_allowed_total{{{l}}}"), slots),
            (format!("cellrate_denied_total{{{l}}}"), 3),
            (format!("cellrate_peeks_total{{{l}}}"), 0),
            (format!("cellrate_evictions_total{{{l},reason=idle}}"), idle),
            (
                format!("cellrate_evictions_total{{{l},reason=overflow}}"),
                0,
            ),
            (format!("cellrate_overflow_denials_total{{{l}}}"), 3),
        ])
    };
    let owned = |m: BTreeMap<&str, u64>| -> BTreeMap<String, u64> {
        m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    };
    assert_eq!(owned(counters(&full)), expected(0));
    assert_eq!(owned(counters(&swept)), expected(slots));
    assert_eq!(
        swept.get(&format!("cellrate_keys{{{l}}}")),
        Some(&Value::Gauge(0.0))
    );
}

#[test]
fn overflow_evictions_are_published() {
    let slow = Quota::try_new(Duration::from_micros(1), 1).unwrap();
    let limiter = KeyedLimiter::<u64, _>::builder(slow)
        .max_keys(8)
        .clock(ManualClock::new())
        .build()
        .named("evicting");
    let slots = limiter.capacity() as u64;
    for k in 0..slots + 4 {
        limiter.check_key_n_at(&k, 1, Nanos::new(k)).unwrap();
    }
    let ((), series) = captured(|| limiter.publish_metrics());
    let c = counters(&series);
    assert_eq!(
        c["cellrate_evictions_total{limiter=evicting,reason=overflow}"],
        4
    );
    assert_eq!(c["cellrate_allowed_total{limiter=evicting}"], slots + 4);
}

/// The waits recorded in `series` under `name`, each between what it was to wait (`planned`,
/// in seconds) and 50 ms more (a loaded machine's sleep).
fn assert_waited(series: &BTreeMap<String, Value>, name: &str, planned: &[f64]) {
    let Value::Histogram(waited) = &series[name] else {
        panic!("{name} is not a histogram: {series:?}");
    };
    assert_eq!(waited.len(), planned.len(), "{name}: {waited:?}");
    for (waited, planned) in waited.iter().zip(planned) {
        assert!(
            *waited >= planned - 1e-9 && *waited < planned + 0.05,
            "{name}: waited {waited} s where {planned} s were due"
        );
    }
}

#[test]
fn waits_are_recorded_in_a_histogram_as_waited() {
    // 50 a second: with the bucket empty, the next token is 20 ms away.
    let q = Quota::per_second(50).with_burst(1);
    let limiter = Limiter::with_clock(q, MonotonicClock::new()).named("shaped");
    let keyed = KeyedLimiter::<u64, _>::with_clock(q, MonotonicClock::new()).named("shaped keys");
    let ((), series) = captured(|| {
        limiter.wait_n(1, Duration::ZERO).unwrap(); // no wait
        limiter.wait_n(1, Duration::from_secs(1)).unwrap(); // 20 ms
        limiter.wait_n(1, Duration::from_secs(1)).unwrap(); // 20 ms
        limiter.wait_n(1, Duration::from_millis(10)).unwrap_err(); // refused: not recorded
        keyed.key(&1).wait_n(1, Duration::ZERO).unwrap();
        keyed.key(&1).wait_n(1, Duration::from_secs(1)).unwrap();
    });
    assert_waited(
        &series,
        "cellrate_wait_seconds{limiter=shaped}",
        &[0.0, 0.02, 0.02],
    );
    assert_waited(
        &series,
        "cellrate_wait_seconds{limiter=shaped keys}",
        &[0.0, 0.02],
    );
    let stats = limiter.stats();
    assert_eq!((stats.allowed, stats.denied), (3, 1));
}

#[cfg(feature = "async")]
#[test]
fn async_waits_are_recorded_as_waited_and_a_dropped_one_not_at_all() {
    let limiter = Limiter::with_clock(Quota::per_second(50).with_burst(1), MonotonicClock::new())
        .named("async");
    let ((), series) = captured(|| {
        futures::executor::block_on(async {
            limiter.until_ready_n(1, Duration::ZERO).await.unwrap();
            limiter
                .until_ready_n(1, Duration::from_secs(1))
                .await
                .unwrap();
            // Dropped before it ends: its tokens come back, and it is no decision.
            let dropped = limiter.until_ready_n(1, Duration::from_secs(1));
            futures::pin_mut!(dropped);
            let waker = futures::task::noop_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            assert!(dropped.as_mut().poll(&mut cx).is_pending());
        })
    });
    assert_waited(
        &series,
        "cellrate_wait_seconds{limiter=async}",
        &[0.0, 0.02],
    );
    assert_eq!(limiter.stats().allowed, 2, "the dropped wait was counted");
}
