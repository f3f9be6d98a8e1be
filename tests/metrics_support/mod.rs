//! What a named limiter published, captured by metrics-util's debugging recorder installed
//! for one closure only (`metrics::with_local_recorder`, no global recorder).

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use std::collections::BTreeMap;

/// One series: its name and its labels, sorted, as `name{k=v,k=v}`.
pub type Series = String;

/// A published value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Counter(u64),
    Gauge(f64),
    Histogram(Vec<f64>),
}

/// Runs `f` with a debugging recorder as this thread's recorder; every series it published.
pub fn captured<T>(f: impl FnOnce() -> T) -> (T, BTreeMap<Series, Value>) {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let out = metrics::with_local_recorder(&recorder, f);
    (out, series_of(snapshotter.snapshot()))
}

/// The series of a snapshot, by name and sorted labels.
fn series_of(snapshot: metrics_util::debugging::Snapshot) -> BTreeMap<Series, Value> {
    snapshot
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let mut labels: Vec<_> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            labels.sort();
            let name = format!("{}{{{}}}", key.name(), labels.join(","));
            let value = match value {
                DebugValue::Counter(n) => Value::Counter(n),
                DebugValue::Gauge(g) => Value::Gauge(g.into_inner()),
                DebugValue::Histogram(h) => {
                    Value::Histogram(h.into_iter().map(|v| v.into_inner()).collect())
                }
            };
            (name, value)
        })
        .collect()
}

/// `series`, with only the counters, as `(name{labels}, count)`.
pub fn counters(series: &BTreeMap<Series, Value>) -> BTreeMap<&str, u64> {
    series
        .iter()
        .filter_map(|(k, v)| match v {
            Value::Counter(n) => Some((k.as_str(), *n)),
            _ => None,
        })
        .collect()
}

/// A debugging recorder kept across several closures: the series accumulate as an exporter's
/// would (the recorder hands counters and gauges over as moved since its last snapshot: they
/// are summed here), and
/// each [`series`](Self::series) is what an exporter would show so far.
pub struct Recording {
    recorder: DebuggingRecorder,
    snapshotter: metrics_util::debugging::Snapshotter,
    so_far: std::cell::RefCell<BTreeMap<Series, Value>>,
}

impl Recording {
    pub fn new() -> Recording {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        Recording {
            recorder,
            snapshotter,
            so_far: Default::default(),
        }
    }

    /// Runs `f` with this recording as the thread's recorder.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        metrics::with_local_recorder(&self.recorder, f)
    }

    /// Every series recorded so far.
    pub fn series(&self) -> BTreeMap<Series, Value> {
        let mut so_far = self.so_far.borrow_mut();
        for (name, value) in series_of(self.snapshotter.snapshot()) {
            let summed = match (so_far.get(&name), value) {
                (Some(Value::Counter(before)), Value::Counter(n)) => Value::Counter(before + n),
                // The debugging recorder hands gauges over as moved since its last snapshot
                // too (cellrate only moves them).
                (Some(Value::Gauge(before)), Value::Gauge(g)) => Value::Gauge(before + g),
                (_, value) => value,
            };
            so_far.insert(name, summed);
        }
        so_far.clone()
    }
}
