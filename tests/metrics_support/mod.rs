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
    let series = snapshotter
        .snapshot()
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
        .collect();
    (out, series)
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
