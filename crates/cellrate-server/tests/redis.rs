//! Buckets in Redis (`--redis`): two servers sharing one real redis-server admit one limit
//! between them, and a request whose descriptors cost differently is still all or nothing.
//! Skipped with a notice where `redis-server` is not installed.

use crate::resp_client::Client;
use crate::support::{descriptor, request, Running};
use envoy_types::pb::google::protobuf::UInt64Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Redis(Child, u16);

impl Redis {
    fn start() -> Option<Redis> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .spawn()
            .ok()?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Redis(child, port))
    }
}

impl Redis {
    /// The settings of a server keeping its buckets in this Redis.
    fn settings(&self) -> impl FnOnce(&mut cellrate_server::Settings) {
        let url = format!("redis://127.0.0.1:{}", self.1);
        move |s| {
            s.redis = Some(url);
            s.redis_deadline_ms = 2_000;
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const SHARED: &str = "domain: shared\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 60, burst: 5, name: per-user}\n  - key: org\n    rate_limit: {unit: hour, requests_per_unit: 60, burst: 5, name: per-org}\n";

#[tokio::test]
async fn two_servers_share_one_limit_through_redis() {
    let Some(redis) = Redis::start() else {
        eprintln!("skipped: redis-server not found");
        return;
    };
    let mut a = Running::start(&[("shared.yaml", SHARED)], redis.settings()).await;
    let mut b = Running::start(&[("shared.yaml", SHARED)], redis.settings()).await;
    let call = || request("shared", vec![descriptor(&[("user", "u1")])], 0);
    let mut admitted = 0;
    for i in 0..12 {
        let s = if i % 2 == 0 { &mut a } else { &mut b };
        let answer = s.call(call()).await.unwrap();
        if answer.overall_code == 1 {
            admitted += 1;
            assert_eq!(answer.statuses[0].limit_remaining, 5 - admitted);
        }
    }
    assert_eq!(admitted, 5, "one burst between both servers");

    // Costs that differ: the org's 4 fit, the user's 6 do not (burst 5): nothing is spent.
    let mut user = descriptor(&[("user", "u2")]);
    user.hits_addend = Some(UInt64Value { value: 3 });
    let mut org = descriptor(&[("org", "o2")]);
    org.hits_addend = Some(UInt64Value { value: 4 });
    let answer = a
        .call(request("shared", vec![user.clone(), org.clone()], 0))
        .await
        .unwrap();
    assert_eq!(answer.overall_code, 1);
    assert_eq!(
        [
            answer.statuses[0].limit_remaining,
            answer.statuses[1].limit_remaining
        ],
        [2, 1]
    );
    let answer = b.call(request("shared", vec![user, org], 0)).await.unwrap();
    assert_eq!(answer.overall_code, 2);
    assert_eq!([answer.statuses[0].code, answer.statuses[1].code], [2, 2]);
    let mut org = descriptor(&[("org", "o2")]);
    org.hits_addend = Some(UInt64Value { value: 1 });
    let mut user = descriptor(&[("user", "u2")]);
    user.hits_addend = Some(UInt64Value { value: 3 });
    let answer = b.call(request("shared", vec![org, user], 0)).await.unwrap();
    assert_eq!(answer.overall_code, 2, "the user's bucket holds 2");
    assert_eq!([answer.statuses[0].code, answer.statuses[1].code], [1, 2]);
    let answer = a
        .call(request("shared", vec![descriptor(&[("org", "o2")])], 0))
        .await
        .unwrap();
    assert_eq!(
        (answer.overall_code, answer.statuses[0].limit_remaining),
        (1, 0),
        "the refused request gave the org's token back"
    );
    // Every key of the domain carries it as its Cluster hash tag: one slot per request.
    let keys = Command::new("redis-cli")
        .args(["-p", &redis.1.to_string(), "--scan"])
        .output();
    if let Some(out) = keys.ok().filter(|o| o.status.success()) {
        let keys = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(keys.lines().count() >= 3, "{keys}");
        for key in keys.lines() {
            assert!(key.starts_with("cellrate-rls:{shared}"), "{key}");
        }
    }
    a.stop().await;
    b.stop().await;
}

/// A server whose Redis is down starts, and the failure policy answers: `closed` refuses,
/// `open` admits.
#[tokio::test]
async fn the_failure_policy_answers_while_redis_is_down() {
    use cellrate_server::settings::RedisFailure;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for (policy, code, answer) in [
        (RedisFailure::Closed, 2, "failed_closed"),
        (RedisFailure::Open, 1, "failed_open"),
    ] {
        let mut s = Running::start(&[("shared.yaml", SHARED)], |s| {
            s.redis = Some(format!("redis://127.0.0.1:{port}"));
            s.redis_failure = policy;
            s.redis_deadline_ms = 200;
        })
        .await;
        let response = s
            .call(request("shared", vec![descriptor(&[("user", "u")])], 0))
            .await
            .unwrap();
        assert_eq!(response.overall_code, code, "{policy:?}");
        let text = s.server.metrics_text();
        let series = format!("cellrate_rls_storage_errors_total{{answer=\"{answer}\"}}");
        assert_eq!(crate::support::metric(&text, &series), Some(1.0), "{text}");
        s.stop().await;
    }
}

/// `CL.THROTTLE` with `--redis`: servers share each key's bucket. There a rate is part of a
/// bucket's name, so a key called with other parameters is another bucket, full.
#[tokio::test]
async fn cl_throttle_buckets_are_shared_through_redis() {
    let Some(redis) = Redis::start() else {
        eprintln!("skipped: redis-server not found");
        return;
    };
    let a = Running::start(&[], redis.settings()).await;
    let b = Running::start(&[], redis.settings()).await;
    let mut clients = [
        Client::connect(a.resp_port).await,
        Client::connect(b.resp_port).await,
    ];
    // One token an hour: the remaining counts do not move while the test runs.
    let call = ["CL.THROTTLE", "user123", "15", "1", "3600"];
    for i in 0..16 {
        let reply = clients[i % 2].call(&call).await.ints();
        assert_eq!(reply[..4], [0, 16, 15 - i as i64, -1], "call {i}");
    }
    let refused = clients[0].call(&call).await.ints();
    assert_eq!(refused[..3], [1, 16, 0], "one bucket between both servers");
    let other = clients[1]
        .call(&["CL.THROTTLE", "user123", "3", "1", "3600"])
        .await;
    assert_eq!(
        other.ints()[..3],
        [0, 4, 3],
        "other parameters: another bucket"
    );
    let keys = Command::new("redis-cli")
        .args([
            "-p",
            &redis.1.to_string(),
            "--scan",
            "--pattern",
            "*throttle*",
        ])
        .output();
    if let Some(out) = keys.ok().filter(|o| o.status.success()) {
        let keys = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(keys.lines().count(), 2, "{keys}");
        for key in keys.lines() {
            assert!(key.starts_with("cellrate-rls:throttle:user123%q"), "{key}");
        }
    }
    a.stop().await;
    b.stop().await;
}
