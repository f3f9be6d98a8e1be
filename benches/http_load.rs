//! The HTTP layer as a client sees it: real axum servers on loopback, bare, behind cellrate's
//! layer (its defaults: `RateLimit` headers on every response, and without headers on
//! admitted responses: the work tower_governor's defaults do) and behind tower_governor's (its
//! defaults: no headers on admitted responses), each limiting per client IP with a quota that
//! admits every request, driven to saturation by `wrk` (Debian's package).
//!
//! Each server runs on a tokio runtime with one worker thread, so that on a 2-core machine
//! the server has one core and `wrk -t1` the other. In each round every server is loaded for
//! the same few seconds, in an order that rotates from round to round; the figures are the
//! medians (and ranges) over the rounds, and the ratios to the bare server are taken within
//! each round before the median. Part of the `http` suite; skipped, saying so, without `wrk`.

use crate::http::{app, cellrate_layer, governor_layer};
use crate::record::{sized, Record};
use axum::Router;
use std::net::SocketAddr;
use std::process::Command;
use std::sync::mpsc;

/// Connections `wrk` keeps open.
const CONNECTIONS: u32 = 32;

/// Starts `router` on its own one-worker runtime, on a loopback port; returns the address.
fn start(router: Router) -> SocketAddr {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("a loopback port");
            tx.send(listener.local_addr().unwrap()).unwrap();
            let service = router.into_make_service_with_connect_info::<SocketAddr>();
            axum::serve(listener, service)
                .await
                .expect("the server runs");
        });
    });
    rx.recv().expect("the server's address")
}

/// What one `wrk` run measured.
struct Load {
    per_sec: f64,
    p50_us: f64,
    p99_us: f64,
}

/// A `wrk` duration ("123.45us", "1.20ms", "2.00s") in microseconds.
fn micros(text: &str) -> Option<f64> {
    let (number, scale) = if let Some(n) = text.strip_suffix("us") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1e6)
    } else {
        return None;
    };
    number.parse::<f64>().ok().map(|n| n * scale)
}

/// Loads `addr` with `wrk` for `secs` seconds.
fn load(addr: SocketAddr, secs: u32) -> Load {
    let output = Command::new("wrk")
        .args([
            "-t1",
            &format!("-c{CONNECTIONS}"),
            &format!("-d{secs}s"),
            "--latency",
        ])
        .arg(format!("http://{addr}/"))
        .output()
        .expect("wrk runs");
    let text = String::from_utf8_lossy(&output.stdout);
    let field = |label: &str| {
        text.lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(label).map(|rest| rest.trim().to_owned()))
            .unwrap_or_else(|| panic!("wrk printed no {label}:\n{text}"))
    };
    let latency = |label: &str| micros(&field(label)).expect("a wrk latency");
    Load {
        per_sec: field("Requests/sec:").parse().expect("a wrk rate"),
        p50_us: latency("50%"),
        p99_us: latency("99%"),
    }
}

fn median_and_range(mut v: Vec<f64>) -> [f64; 3] {
    v.sort_by(f64::total_cmp);
    [v[0], v[v.len() / 2], v[v.len() - 1]]
}

pub fn main() {
    if Command::new("wrk").arg("--version").output().is_err() {
        println!("load: wrk is not installed; the loopback rows are left out");
        return;
    }
    let subjects = [
        ("bare", start(app())),
        ("cellrate", start(app().layer(cellrate_layer(true)))),
        (
            "cellrate_no_headers",
            start(app().layer(cellrate_layer(false))),
        ),
        ("tower_governor", start(app().layer(governor_layer()))),
    ];
    let (rounds, secs) = (sized(5, 1), sized(4, 1));
    for (_, addr) in &subjects {
        load(*addr, 1); // connections made, every cache warm
    }
    let mut runs: Vec<Vec<Load>> = subjects.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for k in 0..subjects.len() {
            let s = (round + k) % subjects.len();
            runs[s].push(load(subjects[s].1, secs));
        }
    }
    println!("loopback, wrk -t1 -c{CONNECTIONS} -d{secs}s, {rounds} rounds: median (min-max)");
    for (s, (name, _)) in subjects.iter().enumerate() {
        let rate = median_and_range(runs[s].iter().map(|l| l.per_sec).collect());
        let of_bare = median_and_range(
            runs[s]
                .iter()
                .zip(&runs[0])
                .map(|(l, b)| l.per_sec / b.per_sec)
                .collect(),
        );
        let p50 = median_and_range(runs[s].iter().map(|l| l.p50_us).collect());
        let p99 = median_and_range(runs[s].iter().map(|l| l.p99_us).collect());
        println!(
            "{name:<16} {:>9.0} req/s ({:.0}-{:.0}), {:.2}x bare, p50 {:.0} us, p99 {:.0} us",
            rate[1], rate[0], rate[2], of_bare[1], p50[1], p99[1]
        );
        Record::new("http", "load")
            .text("name", name)
            .nums("per_sec", &rate)
            .nums("of_bare", &of_bare)
            .nums("p50_us", &p50)
            .nums("p99_us", &p99)
            .num("rounds", rounds as f64)
            .num("secs", f64::from(secs))
            .num("connections", f64::from(CONNECTIONS))
            .write();
    }
}
