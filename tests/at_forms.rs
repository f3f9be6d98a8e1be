//! Every `try_*` call of `cellrate-redis` that decides at a time has an `_at(now)` twin: read
//! from the sources, so that a new call without its twin fails here. (The in-process limiters
//! take a time through a view, `limiter.at(now)` and `keyed.at(now)`, whose operations are
//! checked against the clock's in `limiter.rs` and `keyed.rs`.)

use std::path::{Path, PathBuf};

/// The calls that decide at a time, by how their names start.
const TIMED: &[&str] = &[
    "check",
    "reserve",
    "available",
    "cancel",
    "settle",
    "start_empty",
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The names of the public functions of every file under `dir`.
fn public_functions(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(dir, &mut files);
    let mut names = Vec::new();
    for file in files {
        let code = std::fs::read_to_string(&file).expect("a source file");
        for line in code.lines() {
            let line = line.trim_start();
            let rest = line
                .strip_prefix("pub fn ")
                .or_else(|| line.strip_prefix("pub async fn "));
            if let Some(rest) = rest {
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                names.push(rest[..end].to_owned());
            }
        }
    }
    names
}

/// Whether `name` is the call `stem` or one of its forms (`check_n` of `check`, not
/// `checked_add`).
fn is_call(name: &str, stem: &str) -> bool {
    name == stem
        || name
            .strip_prefix(stem)
            .is_some_and(|rest| rest.starts_with('_'))
}

/// The calls among `names` selected by `timed` that have no `_at` twin.
fn without_at_form(names: &[String], timed: impl Fn(&str) -> bool) -> Vec<String> {
    let mut missing: Vec<String> = names
        .iter()
        .filter(|n| timed(n) && !n.contains("_at"))
        .filter(|n| !names.contains(&format!("{n}_at")))
        .cloned()
        .collect();
    missing.sort();
    missing.dedup();
    missing
}

#[test]
fn every_try_call_of_the_redis_crate_has_an_at_form() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let names = public_functions(&root.join("crates/cellrate-redis/src"));
    let timed = |n: &str| {
        n.strip_prefix("try_")
            .is_some_and(|n| TIMED.iter().any(|t| is_call(n, t)))
    };
    assert!(
        names.iter().any(|n| n == "try_check_key_n_at"),
        "the scan found nothing"
    );
    assert_eq!(without_at_form(&names, timed), Vec::<String>::new());
}

/// A call without its twin is found.
#[test]
fn a_missing_at_form_is_found() {
    let names = ["check_n", "check_n_at", "reserve_n"].map(String::from);
    assert_eq!(without_at_form(&names, |_| true), ["reserve_n"]);
}
