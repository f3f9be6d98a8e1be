//! What the server's benches share: their markdown lines, written for `benches/report.py`.

use std::io::Write;

/// Prints `lines` to stderr and, if `BENCH_RECORDS` names a file, writes them there as
/// records of kind `markdown`, one JSON line each.
pub fn report_markdown(lines: &[String]) {
    for line in lines {
        eprintln!("{line}");
    }
    if let Ok(path) = std::env::var("BENCH_RECORDS") {
        let mut file = std::fs::File::create(path).unwrap();
        for line in lines {
            let escaped = line.replace('\\', "\\\\").replace('"', "\\\"");
            writeln!(file, "{{\"kind\": \"markdown\", \"line\": \"{escaped}\"}}").unwrap();
        }
    }
}
