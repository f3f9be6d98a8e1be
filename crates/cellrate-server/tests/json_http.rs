//! The JSON endpoints: `POST /json` (an RLS request in the proto3 JSON mapping, answered as
//! the reference server answers) and `POST /throttle` (`CL.THROTTLE` by name, in the same
//! buckets); their refusals (bad JSON, unknown fields, invalid requests, a body too large, a
//! type that is not JSON); and `--json-port`.

use crate::decisions::SHOP;
use crate::resp_client::Client;
use crate::support::{http_get, http_post, Running};
use cellrate::ManualClock;
use cellrate_server::{Config, Listeners, Server, Settings};
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::net::TcpListener;

async fn post(port: u16, path: &str, body: &str) -> (u16, String, Value) {
    let (status, headers, text) =
        http_post(port, path, Some("application/json"), body.as_bytes()).await;
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, headers, value)
}

#[tokio::test]
async fn rls_in_json() {
    let s = Running::start(&[("shop.yaml", SHOP)], |_| {}).await;
    let request = r#"{"domain":"shop","descriptors":[{"entries":[{"key":"user","value":"u1"}]}]}"#;
    let limit = json!({"requestsPerUnit": 10, "unit": "SECOND", "name": "per-user"});
    for (remaining, reset) in [(3, "0.100s"), (2, "0.200s"), (1, "0.300s")] {
        let (status, _, body) = post(s.http_port, "/json", request).await;
        assert_eq!(status, 200);
        let want = json!({"overallCode": "OK", "statuses": [
            {"code": "OK", "currentLimit": limit, "limitRemaining": remaining, "durationUntilReset": reset}
        ]});
        assert_eq!(body, want);
    }
    // The proto field names work too, and a per-descriptor cost as a string (a UInt64Value).
    let snake = r#"{"domain":"shop","descriptors":[{"entries":[{"key":"user","value":"u1"}],"hits_addend":"1"}]}"#;
    let (status, _, body) = post(s.http_port, "/json", snake).await;
    assert_eq!(status, 200);
    assert_eq!(body["statuses"][0]["durationUntilReset"], "0.400s");
    // Empty now: 429, OVER_LIMIT, retry in whole seconds; nothing remaining is left out.
    let (status, _, body) = post(s.http_port, "/json", request).await;
    assert_eq!(status, 429);
    assert_eq!(
        body,
        json!({"overallCode": "OVER_LIMIT", "statuses": [
            {"code": "OVER_LIMIT", "currentLimit": limit, "durationUntilReset": "1s"}
        ]})
    );
    // The reference server's own example sends a form's type (curl --data): taken as JSON.
    let (status, _, text) = http_post(
        s.http_port,
        "/json",
        Some("application/x-www-form-urlencoded"),
        br#"{"domain":"none","descriptors":[{"entries":[{"key":"k"}]}]}"#,
    )
    .await;
    assert_eq!(
        (status, text.as_str()),
        (200, r#"{"overallCode":"OK","statuses":[{"code":"OK"}]}"#)
    );
    s.stop().await;
}

#[tokio::test]
async fn refusals() {
    let s = Running::start(&[("shop.yaml", SHOP)], |settings| {
        settings.max_message_bytes = 4096;
    })
    .await;
    let cases: [(&str, &str, u16, &str); 7] = [
        ("/json", "{", 400, "invalid JSON body"),
        (
            "/json",
            r#"{"domian":"shop"}"#,
            400,
            "unknown field `domian`",
        ),
        (
            "/json",
            r#"{"domain":"","descriptors":[]}"#,
            400,
            "domain must not be empty",
        ),
        (
            "/json",
            r#"{"domain":"d","hitsAddend":4294967296}"#,
            400,
            "hitsAddend is more than 2^32 - 1",
        ),
        (
            "/throttle",
            r#"{"key":"k","max_burst":1,"count_per_period":0,"period":1}"#,
            400,
            "Zero rates are not supported",
        ),
        (
            "/throttle",
            r#"{"key":"k","max_burst":1,"period":1}"#,
            400,
            "missing field `count_per_period`",
        ),
        (
            "/throttle",
            r#"{"key":"k","max_burst":-1,"count_per_period":1,"period":1}"#,
            400,
            "max_burst (-1) must be 0 or more",
        ),
    ];
    for (path, body, status, reason) in cases {
        let (got, _, text) =
            http_post(s.http_port, path, Some("application/json"), body.as_bytes()).await;
        assert_eq!(got, status, "{path} {body}: {text}");
        assert!(text.contains(reason), "{path} {body}: {text}");
    }
    let (status, _, text) = http_post(s.http_port, "/throttle", Some("text/xml"), b"<k/>").await;
    assert_eq!(status, 415, "{text}");
    let big = format!(
        r#"{{"key":"{}","max_burst":1,"count_per_period":1,"period":1}}"#,
        "k".repeat(5000)
    );
    let (status, _, _) = http_post(s.http_port, "/throttle", None, big.as_bytes()).await;
    assert_eq!(status, 413);
    assert_eq!(http_get(s.http_port, "/json").await.0, 405);
    s.stop().await;
}

/// `POST /throttle` and `CL.THROTTLE` decide in the same buckets and answer the same figures.
#[tokio::test]
async fn throttle_in_json_shares_the_resp_buckets() {
    let s = Running::start(&[], |_| {}).await;
    let mut c = Client::connect(s.resp_port).await;
    let reply = c
        .call(&["CL.THROTTLE", "user123", "1", "1", "60", "1"])
        .await;
    assert_eq!(reply.ints(), [0, 2, 1, -1, 60]);
    let body = r#"{"key":"user123","max_burst":1,"count_per_period":1,"period":60}"#;
    let (status, _, answer) = post(s.http_port, "/throttle", body).await;
    assert_eq!(status, 200);
    assert_eq!(
        answer,
        json!({"limited": false, "limit": 2, "remaining": 0, "retry_after": -1, "reset_after": 120})
    );
    let (status, headers, answer) = post(s.http_port, "/throttle", body).await;
    assert_eq!(status, 429);
    assert!(
        headers.to_ascii_lowercase().contains("retry-after: 60"),
        "{headers}"
    );
    assert_eq!(answer["retry_after"], 60);
    let metrics = s.get("/metrics").await.1;
    assert!(
        metrics.contains("cellrate_throttle_calls_total{via=\"http\",outcome=\"limited\"} 1"),
        "{metrics}"
    );
    s.stop().await;
}

/// `--json-port`: the JSON endpoints move off the HTTP port.
#[tokio::test]
async fn a_port_of_their_own() {
    let settings = Settings::for_dir("unused");
    let server = Server::with_clock(settings, Config::default(), Arc::new(ManualClock::new()))
        .await
        .unwrap();
    let bind = || TcpListener::bind("127.0.0.1:0");
    let (grpc, http, json_port) = (
        bind().await.unwrap(),
        bind().await.unwrap(),
        bind().await.unwrap(),
    );
    let (http_port, port) = (
        http.local_addr().unwrap().port(),
        json_port.local_addr().unwrap().port(),
    );
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(
        server.serve_with(Listeners::new(grpc, http).json(json_port), async {
            let _ = rx.await;
        }),
    );
    let body = r#"{"key":"k","max_burst":0,"count_per_period":1,"period":1}"#;
    assert_eq!(post(port, "/throttle", body).await.0, 200);
    assert_eq!(post(http_port, "/throttle", body).await.0, 404);
    assert_eq!(http_get(http_port, "/healthz").await.0, 200);
    let _ = tx.send(());
    task.await.unwrap().unwrap();
}
