//! `CL.THROTTLE`'s replies as redis-cell gives them: its README's example, its own tests'
//! expected figures, a call with other parameters for a key that has a stored time, and long
//! random schedules checked call by call against its arithmetic (`cell_model.rs`), over RESP
//! and `POST /throttle` on a server at a test clock.

use crate::cell_model::{CellModel, Figures};
use crate::resp_client::{Client, Reply};
use crate::support::{http_post, Running};
use cellrate::Clock;
use std::time::Duration;

async fn throttle(c: &mut Client, key: &str, args: [i64; 4]) -> Figures {
    let [b, n, p, q] = args.map(|a| a.to_string());
    let reply = c.call(&["CL.THROTTLE", key, &b, &n, &p, &q]).await;
    reply.ints().try_into().expect("five integers")
}

#[tokio::test]
async fn the_readme_example() {
    let s = Running::start(&[], |_| {}).await;
    let mut c = Client::connect(s.resp_port).await;
    let reply = c.call(&["CL.THROTTLE", "user123", "15", "30", "60"]).await;
    assert_eq!(reply.ints(), [0, 16, 15, -1, 2]);
    // The lower-case name, and the quantity given.
    let reply = c
        .call(&["cl.throttle", "user123", "15", "30", "60", "1"])
        .await;
    assert_eq!(reply.ints(), [0, 16, 14, -1, 4]);
    s.stop().await;
}

/// redis-cell's `it_rate_limits`: a bucket of 5 (max_burst 4) earning one token a second,
/// called at the times of its table; its durations here rounded as its reply rounds them.
#[tokio::test]
async fn redis_cells_own_table() {
    let s = Running::start(&[], |_| {}).await;
    let mut c = Client::connect(s.resp_port).await;
    // (at ms, quantity, the reply)
    let cases: [(u64, i64, Figures); 15] = [
        (0, 6, [1, 5, 5, -1, 0]),
        (0, 1, [0, 5, 4, -1, 1]),
        (0, 1, [0, 5, 3, -1, 2]),
        (0, 1, [0, 5, 2, -1, 3]),
        (0, 1, [0, 5, 1, -1, 4]),
        (0, 1, [0, 5, 0, -1, 5]),
        (0, 1, [1, 5, 0, 1, 5]),
        (3_000, 1, [0, 5, 2, -1, 3]),
        (3_100, 1, [0, 5, 1, -1, 4]),
        (4_000, 1, [0, 5, 1, -1, 4]),
        (8_000, 1, [0, 5, 4, -1, 1]),
        (9_500, 1, [0, 5, 4, -1, 1]),
        (9_500, 0, [0, 5, 4, -1, 1]),
        (9_500, 2, [0, 5, 2, -1, 3]),
        (9_500, 5, [1, 5, 2, 3, 3]),
    ];
    let start = s.clock.now().as_u64();
    for (i, (at_ms, quantity, want)) in cases.into_iter().enumerate() {
        let at = start + at_ms * 1_000_000;
        s.clock
            .advance(Duration::from_nanos(at - s.clock.now().as_u64()));
        let got = throttle(&mut c, "foo", [4, 1, 1, quantity]).await;
        assert_eq!(got, want, "case {i}");
    }
    s.stop().await;
}

/// redis-cell's end-to-end test: `CL.THROTTLE user123 0 1 2 1`, allowed, then limited, then
/// allowed again once its retry time has passed.
#[tokio::test]
async fn redis_cells_end_to_end_test() {
    let s = Running::start(&[], |_| {}).await;
    let mut c = Client::connect(s.resp_port).await;
    assert_eq!(
        throttle(&mut c, "user123", [0, 1, 2, 1]).await,
        [0, 1, 0, -1, 2]
    );
    assert_eq!(
        throttle(&mut c, "user123", [0, 1, 2, 1]).await,
        [1, 1, 0, 2, 2]
    );
    s.clock.advance(Duration::from_secs(2));
    assert_eq!(
        throttle(&mut c, "user123", [0, 1, 2, 1]).await,
        [0, 1, 0, -1, 2]
    );
    s.stop().await;
}

/// A key keeps one quota at a time; a call with other parameters keeps its stored time and is
/// judged under the new parameters, as redis-cell judges it.
#[tokio::test]
async fn other_parameters_keep_the_stored_time() {
    let s = Running::start(&[], |_| {}).await;
    let mut c = Client::connect(s.resp_port).await;
    // 4 tokens of 2 s: full again in 8 s.
    assert_eq!(
        throttle(&mut c, "k", [15, 30, 60, 4]).await,
        [0, 16, 12, -1, 8]
    );
    // Now 50 a second, 16 deep (320 ms): the 8 s stand, so it is refused until 7.7 s pass.
    assert_eq!(
        throttle(&mut c, "k", [15, 50, 1, 1]).await,
        [1, 16, 0, 8, 8]
    );
    s.clock.advance(Duration::from_millis(7_700));
    assert_eq!(
        throttle(&mut c, "k", [15, 50, 1, 1]).await,
        [0, 16, 0, -1, 1]
    );
    // Back to the first parameters: the time is still the one stored (320 ms ahead).
    assert_eq!(
        throttle(&mut c, "k", [15, 30, 60, 0]).await,
        [0, 16, 15, -1, 1]
    );
    // Deep, then shallow (the time stored lies past the new depth), then deep again: the time
    // is still the one stored, not moved by the excess.
    assert_eq!(
        throttle(&mut c, "d", [200, 1, 1, 150]).await,
        [0, 201, 51, -1, 150]
    );
    assert_eq!(
        throttle(&mut c, "d", [0, 1, 2, 0]).await,
        [1, 1, 0, 148, 150]
    );
    assert_eq!(
        throttle(&mut c, "d", [200, 1, 1, 0]).await,
        [0, 201, 51, -1, 150]
    );
    let metrics = s.get("/metrics").await.1;
    assert!(
        metrics.contains("cellrate_throttle_quota_changes_total 4"),
        "{metrics}"
    );
    s.stop().await;
}

/// Random schedules of calls on a few keys, with parameters that change (deep to shallow to
/// deep), quantities from 0 to beyond the limit, and times from 0 to seconds apart: every
/// reply, over RESP and over HTTP, is redis-cell's.
#[tokio::test]
async fn random_schedules_reply_as_redis_cell_does() {
    let s = Running::start(&[], |_| {}).await;
    let mut c = Client::connect(s.resp_port).await;
    let params: [(i64, i64, i64); 7] = [
        (15, 30, 60),
        (0, 1, 2),
        (4, 1, 1),
        (2, 7, 60),
        (100, 1_000, 1),
        (200, 1, 1),
        (3, 3, 3_600),
    ];
    let mut rng = fastrand::Rng::with_seed(46);
    let mut model = CellModel::default();
    for step in 0..3_000 {
        match rng.u8(..4) {
            0 => {}
            1 => s.clock.advance(Duration::from_nanos(rng.u64(..2_000_000))),
            _ => s
                .clock
                .advance(Duration::from_nanos(rng.u64(..3_000_000_000))),
        }
        let key = ["a", "b", "c"][rng.usize(..3)];
        let (b, n, p) = params[rng.usize(..params.len())];
        let quantity = rng.i64(0..=b + 2);
        let now = s.clock.now().as_u64();
        let want = model.call(now, key.as_bytes(), b, n, p, quantity);
        let got = if step % 5 == 0 {
            let body = format!(
                r#"{{"key":"{key}","max_burst":{b},"count_per_period":{n},"period":{p},"quantity":{quantity}}}"#
            );
            let (status, _, text) =
                http_post(s.http_port, "/throttle", None, body.as_bytes()).await;
            assert_eq!(status, if want[0] == 1 { 429 } else { 200 }, "{text}");
            let figure = |name: &str| -> i64 {
                let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                match &v[name] {
                    serde_json::Value::Bool(b) => i64::from(*b),
                    other => other.as_i64().unwrap(),
                }
            };
            [
                "limited",
                "limit",
                "remaining",
                "retry_after",
                "reset_after",
            ]
            .map(figure)
        } else {
            throttle(&mut c, key, [b, n, p, quantity]).await
        };
        assert_eq!(
            got, want,
            "step {step}: {key} {b} {n} {p} {quantity} at {now} ns"
        );
    }
    s.stop().await;
}

/// The errors redis-cell gives, word for word, and the refusals of arguments it would misuse;
/// none of them spends.
#[tokio::test]
async fn argument_errors() {
    let s = Running::start(&[], |_| {}).await;
    let mut c = Client::connect(s.resp_port).await;
    let usage = "Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]";
    let cases: [(&[&str], &str); 12] = [
        (&["CL.THROTTLE"], usage),
        (&["CL.THROTTLE", "k", "1", "1"], usage),
        (&["CL.THROTTLE", "k", "1", "1", "1", "1", "1"], usage),
        (
            &["CL.THROTTLE", "k", "x", "1", "1"],
            "Cell error: Store error: Couldn't parse as integer: x",
        ),
        (
            &["CL.THROTTLE", "k", "1", "1", "1.5"],
            "Cell error: Store error: Couldn't parse as integer: 1.5",
        ),
        (
            &["CL.THROTTLE", "k", "1", "0", "1"],
            "Cell error: Store error: Zero rates are not supported",
        ),
        (
            &["CL.THROTTLE", "k", "1", "1", "0"],
            "Cell error: Store error: Zero rates are not supported",
        ),
        (
            &["CL.THROTTLE", "k", "1", "2000000000", "1"],
            "Cell error: Store error: Zero rates are not supported",
        ),
        (
            &["CL.THROTTLE", "k", "-1", "1", "1"],
            "ERR max_burst (-1) must be 0 or more",
        ),
        (
            &["CL.THROTTLE", "k", "1", "-1", "1"],
            "ERR count per period (-1) and period (1) must be positive",
        ),
        (
            &["CL.THROTTLE", "k", "1", "1", "1", "-1"],
            "ERR quantity (-1) must be 0 or more: tokens are not given back",
        ),
        (
            &["CL.THROTTLE", "k", "4294967295", "1", "1"],
            "ERR max_burst (4294967295) must be at most 4294967294",
        ),
    ];
    for (args, error) in cases {
        assert_eq!(
            c.call(args).await,
            Reply::Error(error.to_owned()),
            "{args:?}"
        );
    }
    let absurd = c.call(&["CL.THROTTLE", "k", "1", "1", "9223372036"]).await;
    assert!(
        absurd.error().starts_with("ERR 1 1 9223372036: not a rate"),
        "{absurd:?}"
    );
    // A quantity beyond any bucket: refused for good, nothing spent.
    let huge = c
        .call(&[
            "CL.THROTTLE",
            "k",
            "4294967294",
            "1",
            "1",
            "9223372036854775807",
        ])
        .await;
    assert_eq!(huge.ints(), [1, 4294967295, 4294967295, -1, 0]);
    assert_eq!(throttle(&mut c, "k", [0, 1, 1, 1]).await, [0, 1, 0, -1, 1]);
    s.stop().await;
}
