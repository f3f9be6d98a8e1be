//! The metrics facade (feature `metrics`): every counter, gauge and histogram a named limiter
//! publishes, captured with metrics-util's debugging recorder, with exact values after a
//! scripted sequence on a ManualClock.
#![cfg(feature = "metrics")]

use crate::common::manual;
#[cfg(feature = "async")]
use crate::common::until_judged;
use crate::metrics_support;

use cellrate::{KeyedLimiter, Limiter, ManualClock, MonotonicClock, Nanos, OverflowPolicy, Quota};
use metrics_support::{captured, counters, Recording, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

/// 2 tokens a second, burst 3.
fn quota() -> Quota {
    Quota::per_second(2).with_burst(3)
}

#[test]
fn a_named_limiter_publishes_its_decisions() {
    let (limiter, _) = manual(quota());
    let limiter = limiter.named("api");
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
    let keyed = KeyedLimiter::<u64, _>::builder(quota())
        .clock(ManualClock::new())
        .build();
    limiter.check().unwrap();
    keyed.check_key(&1).unwrap();
    let ((), series) = captured(|| {
        limiter.publish_metrics();
        keyed.publish_metrics();
        limiter.wait(1, Duration::ZERO).unwrap();
        keyed.key(&1).wait(1, Duration::ZERO).unwrap();
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
        let _ = limiter.at(Nanos::new(k)).key(&k).check_n(1);
    }
    // One recording across both publishes, as an exporter keeps its series.
    let recording = Recording::new();
    recording.run(|| limiter.publish_metrics());
    let full = recording.series();
    // At 1 µs + slots ns every bucket is full again: all of them are swept.
    assert_eq!(
        limiter.at(Nanos::new(1_000 + slots)).evict_idle(),
        slots as usize
    );
    recording.run(|| limiter.publish_metrics());
    let swept = recording.series();

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
        limiter.at(Nanos::new(k)).key(&k).check_n(1).unwrap();
    }
    let ((), series) = captured(|| limiter.publish_metrics());
    let c = counters(&series);
    assert_eq!(
        c["cellrate_evictions_total{limiter=evicting,reason=overflow}"],
        4
    );
    assert_eq!(c["cellrate_allowed_total{limiter=evicting}"], slots + 4);
}

/// The waits recorded in `series` under `name`: as many as `planned` (what each was to wait
/// if it began right after the one before, in seconds), none longer than its plan and 50 ms (a
/// loaded machine's sleep), and together at least their plans less 10 ms (a wait that began
/// late waits less).
/// The waits recorded as `name`: as many as `planned`, together no shorter than planned, and
/// no longer than `took`, the run that made them one after another on this thread (measured
/// on the clock the limiters read, so this holds however long a loaded machine stretched it).
fn assert_waited(series: &BTreeMap<String, Value>, name: &str, planned: &[f64], took: Duration) {
    let Value::Histogram(waited) = &series[name] else {
        panic!("{name} is not a histogram: {series:?}");
    };
    assert_eq!(waited.len(), planned.len(), "{name}: {waited:?}");
    assert!(waited.iter().all(|w| *w >= 0.0), "{name}: {waited:?}");
    let (total, due) = (waited.iter().sum::<f64>(), planned.iter().sum::<f64>());
    assert!(
        total >= due - 0.01 && total <= took.as_secs_f64(),
        "{name}: waited {total} s in all ({waited:?}) where {due} s were due, in a run of {took:?}"
    );
}

#[test]
fn waits_are_recorded_in_a_histogram_as_waited() {
    // 50 a second: with the bucket empty, the next token is 20 ms away.
    let q = Quota::per_second(50).with_burst(1);
    let limiter = Limiter::with_clock(q, MonotonicClock::new()).named("shaped");
    let keyed = KeyedLimiter::<u64, _>::builder(q)
        .clock(MonotonicClock::new())
        .build()
        .named("shaped keys");
    let started = Instant::now();
    let ((), series) = captured(|| {
        limiter.wait(1, Duration::ZERO).unwrap(); // no wait
        limiter.wait(1, Duration::from_secs(1)).unwrap(); // 20 ms
        limiter.wait(1, Duration::from_secs(1)).unwrap(); // 20 ms
        limiter.wait(2, Duration::from_secs(1)).unwrap_err(); // above the burst: not recorded
        keyed.key(&1).wait(1, Duration::ZERO).unwrap();
        keyed.key(&1).wait(1, Duration::from_secs(1)).unwrap();
    });
    let took = started.elapsed();
    assert_waited(
        &series,
        "cellrate_wait_seconds{limiter=shaped}",
        &[0.0, 0.02, 0.02],
        took,
    );
    assert_waited(
        &series,
        "cellrate_wait_seconds{limiter=shaped keys}",
        &[0.0, 0.02],
        took,
    );
    let stats = limiter.stats();
    assert_eq!((stats.allowed, stats.denied), (3, 1));
}

#[cfg(feature = "async")]
#[test]
fn async_waits_are_recorded_as_waited_and_a_dropped_one_not_at_all() {
    // A run in which this thread is kept off the cores until the third wait's token is there
    // (so that it ends on its first poll, not dropped while waiting) is not judged.
    until_judged("async waits", || {
        let limiter =
            Limiter::with_clock(Quota::per_second(50).with_burst(1), MonotonicClock::new())
                .named("async");
        let started = Instant::now();
        let (dropped_waiting, series) = captured(|| {
            futures::executor::block_on(async {
                limiter.until_ready(1, Duration::ZERO).await.unwrap();
                limiter
                    .until_ready(1, Duration::from_secs(1))
                    .await
                    .unwrap();
                // Dropped before it ends: its tokens come back, and it is no decision.
                let dropped = limiter.until_ready(1, Duration::from_secs(1));
                futures::pin_mut!(dropped);
                let waker = futures::task::noop_waker();
                let mut cx = std::task::Context::from_waker(&waker);
                dropped.as_mut().poll(&mut cx).is_pending()
            })
        });
        if !dropped_waiting {
            return false;
        }
        assert_waited(
            &series,
            "cellrate_wait_seconds{limiter=async}",
            &[0.0, 0.02],
            started.elapsed(),
        );
        assert_eq!(limiter.stats().allowed, 2, "the dropped wait was counted");
        true
    });
}

#[test]
fn limiters_of_one_name_add_up_and_a_rebuilt_one_takes_over() {
    let many = Quota::per_second(1).with_burst(50);
    let recording = Recording::new();
    let admit = |limiter: &Limiter<ManualClock>, n: usize| {
        for _ in 0..n {
            limiter.check().unwrap();
        }
        recording.run(|| limiter.publish_metrics());
    };
    let allowed = |recording: &Recording| {
        let series = recording.series();
        counters(&series)["cellrate_allowed_total{limiter=dup}"]
    };
    let a = Limiter::with_clock(many, ManualClock::new()).named("dup");
    let b = Limiter::with_clock(many, ManualClock::new()).named("dup");
    admit(&a, 30);
    admit(&b, 5);
    assert_eq!(allowed(&recording), 35, "two limiters of one name add up");
    admit(&a, 0);
    assert_eq!(
        allowed(&recording),
        35,
        "a publish hands over only what is new"
    );
    drop((a, b));
    let rebuilt = Limiter::with_clock(many, ManualClock::new()).named("dup");
    admit(&rebuilt, 20);
    assert_eq!(
        allowed(&recording),
        55,
        "a rebuilt limiter adds from the first publish"
    );

    // Naming again keeps the counts and hands the new name only what comes after.
    let renamed = rebuilt.named("dup2");
    assert_eq!(renamed.stats().allowed, 20, "renaming kept the tally");
    admit(&renamed, 4);
    let series = recording.series();
    let c = counters(&series);
    assert_eq!(
        (
            c["cellrate_allowed_total{limiter=dup}"],
            c["cellrate_allowed_total{limiter=dup2}"]
        ),
        (55, 4)
    );
}

#[test]
fn a_keyed_limiter_dropped_or_renamed_moves_its_keys_out_of_the_gauge() {
    let recording = Recording::new();
    let keys = |recording: &Recording, name: &str| match recording
        .series()
        .get(&format!("cellrate_keys{{limiter={name}}}"))
    {
        Some(Value::Gauge(g)) => *g,
        other => panic!("{other:?}"),
    };
    let make = |n: u64| {
        let limiter = KeyedLimiter::<u64, _>::builder(quota())
            .clock(ManualClock::new())
            .build()
            .named("k");
        for key in 0..n {
            limiter.check_key(&key).unwrap();
        }
        recording.run(|| limiter.publish_metrics());
        limiter
    };
    let (a, b) = (make(3), make(4));
    assert_eq!(keys(&recording, "k"), 7.0);
    recording.run(|| drop(a));
    assert_eq!(keys(&recording, "k"), 4.0);
    let b = recording.run(|| b.named("k2"));
    recording.run(|| b.publish_metrics());
    assert_eq!((keys(&recording, "k"), keys(&recording, "k2")), (0.0, 4.0));
}

#[test]
fn prometheus_text_adds_limiters_of_one_name_up() {
    use metrics_exporter_prometheus::PrometheusBuilder;
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let many = Quota::per_second(1).with_burst(50);
    metrics::with_local_recorder(&recorder, || {
        let a = Limiter::with_clock(many, ManualClock::new()).named("dup");
        let b = Limiter::with_clock(many, ManualClock::new()).named("dup");
        for _ in 0..30 {
            a.check().unwrap();
        }
        for _ in 0..5 {
            b.check().unwrap();
        }
        a.publish_metrics();
        b.publish_metrics();
        drop((a, b));
        let rebuilt = Limiter::with_clock(many, ManualClock::new()).named("dup");
        for _ in 0..20 {
            rebuilt.check().unwrap();
        }
        rebuilt.publish_metrics();
    });
    let text = handle.render();
    let line = text
        .lines()
        .find(|l| l.starts_with("cellrate_allowed_total{limiter=\"dup\"}"))
        .unwrap_or_else(|| panic!("no series in:\n{text}"));
    assert_eq!(line.rsplit(' ').next(), Some("55"), "{line}");
}
