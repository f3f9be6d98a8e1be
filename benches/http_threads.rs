//! The HTTP layer on two threads: one app (one limiter behind its layer) serving requests from
//! two threads at once, each thread polling its own current-thread tokio runtime, as the
//! workers of a multi-threaded server each poll their own connections. Chunks as every other
//! multi-thread row (`overlap.rs`): at least 10 ms per thread, kept only where both threads
//! were on a core together. Rates are requests per second over both threads; the floor is the
//! bare app on two threads. Part of the `http` suite.

use crate::http::{app, cellrate_layer, governor_headers_router, governor_layer, serve, served};
use crate::overlap::run;
use crate::paired::row::{chunk_length, measure, Row, Subject};
use axum::Router;
use std::time::Duration;

/// Requests per batch between two readings of the clock (tens of µs).
const PER_BATCH: u32 = 16;

/// Requests to `service` on `threads` threads, each from its own clients' range.
fn requests<'a>(name: &'static str, service: &'a Router, threads: usize) -> Subject<'a> {
    let chunk = Box::new(move || {
        let runtime = |_| {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a tokio runtime")
        };
        let batch = |rt: &mut tokio::runtime::Runtime, t: usize, i: u64| {
            let start = t as u32 * 500 + i as u32 * PER_BATCH;
            serve(rt, service, start, PER_BATCH);
        };
        run(
            threads,
            chunk_length(threads),
            u64::from(PER_BATCH),
            runtime,
            batch,
        )
        .0
    });
    Subject {
        name,
        threads,
        chunk,
        sleeps: false,
    }
}

pub fn main() {
    println!(
        "two threads on one app: requests per second over both threads, paired; a turn is kept \
         only if every chunk's threads overlapped"
    );
    let bare = served(app());
    let ours = served(app().layer(cellrate_layer(true)));
    let ours_bare = served(app().layer(cellrate_layer(false)));
    let theirs = served(app().layer(governor_layer()));
    let theirs_headers = served(governor_headers_router());
    let mut rows = vec![
        Row::rate(
            "Router::layer, as they come, 2 threads / tower_governor",
            requests("cellrate", &ours, 2),
            requests("tower_governor", &theirs, 2),
        )
        .floor(requests("bare", &bare, 2)),
        Row::rate(
            "Router::layer, no headers, 2 threads / tower_governor",
            requests("cellrate", &ours_bare, 2),
            requests("tower_governor", &theirs, 2),
        )
        .floor(requests("bare", &bare, 2)),
        Row::rate(
            "Router::layer, headers, 2 threads / tower_governor",
            requests("cellrate", &ours, 2),
            requests("tower_governor", &theirs_headers, 2),
        )
        .floor(requests("bare", &bare, 2)),
        Row::rate(
            "Router::layer, as they come, 2 threads / 1 thread",
            requests("2 threads", &ours, 2),
            requests("1 thread", &ours, 1),
        )
        .floor(requests("bare", &bare, 2)),
        Row::rate(
            "bare app, 2 threads / 1 thread",
            requests("2 threads", &bare, 2),
            requests("1 thread", &bare, 1),
        ),
    ];
    measure("http", &mut rows, Duration::from_secs(20));
}
