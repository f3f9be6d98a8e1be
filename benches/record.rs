//! What the plain suites hand to `benches/report.py`, and the reduced-size mode.
//!
//! With `BENCH_RECORDS=<file>` set, a suite appends one JSON object per result to that file
//! (one per line), beside the lines it prints for a reader; `report.py` builds the tables of
//! BENCHMARKS.md from them, so no figure is copied from a terminal by hand.
//!
//! With `BENCH_QUICK=1` every suite shrinks its chunks, budgets and counts to smoke-test its
//! rows in seconds: the figures of such a run are not measurements, and `report.py` says so.

use std::fmt::Write as _;
use std::io::Write as _;

/// Whether `BENCH_QUICK=1` asks for the reduced-size run.
pub fn quick() -> bool {
    std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1")
}

/// `full`, or `small` in the reduced-size run.
pub fn sized<T>(full: T, small: T) -> T {
    if quick() {
        small
    } else {
        full
    }
}

/// One result: a JSON object built field by field, written by [`Record::write`].
pub struct Record {
    json: String,
}

impl Record {
    /// A record of `kind` from `suite`.
    pub fn new(suite: &str, kind: &str) -> Record {
        Record {
            json: String::from("{"),
        }
        .text("suite", suite)
        .text("kind", kind)
    }

    fn key(mut self, key: &str) -> Record {
        if self.json.len() > 1 {
            self.json.push(',');
        }
        push_string(&mut self.json, key);
        self.json.push(':');
        self
    }

    /// A string field.
    pub fn text(self, key: &str, value: &str) -> Record {
        let mut r = self.key(key);
        push_string(&mut r.json, value);
        r
    }

    /// A number field (`null` if not finite).
    pub fn num(self, key: &str, value: f64) -> Record {
        let mut r = self.key(key);
        if value.is_finite() {
            write!(r.json, "{value}").expect("writing to a String");
        } else {
            r.json.push_str("null");
        }
        r
    }

    /// An optional number field.
    pub fn opt(self, key: &str, value: Option<f64>) -> Record {
        match value {
            Some(v) => self.num(key, v),
            None => self.key(key).raw("null"),
        }
    }

    /// A list of numbers (`null` for any that is not finite).
    pub fn nums(self, key: &str, values: &[f64]) -> Record {
        let mut r = self.key(key);
        r.json.push('[');
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                r.json.push(',');
            }
            if v.is_finite() {
                write!(r.json, "{v}").expect("writing to a String");
            } else {
                r.json.push_str("null");
            }
        }
        r.json.push(']');
        r
    }

    /// A list of strings.
    pub fn texts(self, key: &str, values: &[&str]) -> Record {
        let mut r = self.key(key);
        r.json.push('[');
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                r.json.push(',');
            }
            push_string(&mut r.json, v);
        }
        r.json.push(']');
        r
    }

    fn raw(mut self, json: &str) -> Record {
        self.json.push_str(json);
        self
    }

    /// Appends the record to `BENCH_RECORDS`'s file, if it is set.
    pub fn write(mut self) {
        let Some(path) = std::env::var_os("BENCH_RECORDS") else {
            return;
        };
        self.json.push_str("}\n");
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("BENCH_RECORDS={}: {e}", path.to_string_lossy()));
        file.write_all(self.json.as_bytes())
            .expect("write a bench record");
    }
}

/// `s` as a JSON string.
fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32).expect("a String"),
            c => out.push(c),
        }
    }
    out.push('"');
}
