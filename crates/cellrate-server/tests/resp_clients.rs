//! Clients nobody here wrote calling `CL.THROTTLE`: `redis-cli`, the Python `redis` package
//! (`tests/python/resp_client.py`) and `redis-benchmark`, against a server in this process at
//! a test clock, every reply checked against an exact bucket (`cell_model.rs`); and the README's
//! two lines on the real binary. `redis-cli` and `redis-benchmark` come with Debian's
//! `redis-tools`; the tests that need them are skipped with a notice where they are missing,
//! and the Python one where the `redis` package is, unless `CELLRATE_REQUIRE_PYTHON=1` (as
//! `.ci/run` sets after installing it).

use crate::cell_model::CellModel;
use crate::support::with_password;
use cellrate::Clock;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn installed(tool: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("skipped: {tool} not found (Debian's redis-tools)");
    }
    found
}

/// `redis-cli ARGS` (blocking, off the runtime's threads): its output's lines.
async fn redis_cli(args: Vec<String>) -> Vec<String> {
    tokio::task::spawn_blocking(move || {
        let out = Command::new("redis-cli").args(&args).output().unwrap();
        assert!(out.status.success(), "redis-cli {args:?}: {out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    })
    .await
    .unwrap()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

#[tokio::test]
async fn redis_cli_calls_cl_throttle() {
    if !installed("redis-cli") {
        return;
    }
    let s = with_password("pw").await;
    let port = s.resp_port.to_string();
    let auth = ["-p", &port, "-a", "pw", "--no-auth-warning"];
    let mut model = CellModel::default();
    let mut rng = fastrand::Rng::with_seed(7);
    for step in 0..40 {
        s.clock.advance(Duration::from_millis(
            rng.u64(..if step % 4 == 0 { 3_000 } else { 400 }),
        ));
        let quantity = rng.i64(0..4);
        let mut args = strings(&auth);
        if step % 3 == 0 {
            args.push("-3".to_owned());
        }
        args.extend(strings(&["CL.THROTTLE", "user123", "3", "1", "2"]));
        args.push(quantity.to_string());
        let got: Vec<i64> = redis_cli(args)
            .await
            .iter()
            .map(|l| l.parse().unwrap())
            .collect();
        let want = model.call(s.clock.now().as_u64(), b"user123", 3, 1, 2, quantity);
        assert_eq!(got, want, "step {step}");
    }
    // A wrong password: redis-cli reports the failed AUTH, and its command is refused.
    let wrong = redis_cli(strings(&[
        "-p",
        &port,
        "-a",
        "nope",
        "--no-auth-warning",
        "PING",
    ]))
    .await;
    assert_eq!(wrong[0], "NOAUTH Authentication required.");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_redis_package_calls_cl_throttle() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/resp_client.py");
    if !crate::support::python_has("redis", "redis") {
        return;
    }
    let s = with_password("s3cret").await;
    let mut python = Command::new("python3")
        .arg(script)
        .args(["--port", &s.resp_port.to_string(), "--password", "s3cret"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = python.stdin.take().unwrap();
    let mut output = BufReader::new(python.stdout.take().unwrap());
    // One line to python, one line back: blocking, off the runtime's threads.
    let mut exchange = move |line: Option<String>| {
        if let Some(line) = line {
            writeln!(input, "{line}").unwrap();
        }
        let mut answer = String::new();
        output.read_line(&mut answer).unwrap();
        answer
    };
    let ready = tokio::task::block_in_place(|| exchange(None));
    assert_eq!(ready.trim(), "ready", "the package's handshakes and errors");
    let mut model = CellModel::default();
    let mut rng = fastrand::Rng::with_seed(11);
    for step in 0..60 {
        s.clock.advance(Duration::from_millis(rng.u64(..1_500)));
        let now = s.clock.now().as_u64();
        let (line, want) = if step % 10 == 9 {
            // A pipeline of three calls at one time.
            let calls: Vec<i64> = (0..3).map(|_| rng.i64(0..3)).collect();
            let want: Vec<Vec<i64>> = calls
                .iter()
                .map(|&q| model.call(now, b"py", 4, 2, 1, q).to_vec())
                .collect();
            let pipeline: Vec<serde_json::Value> = calls
                .iter()
                .map(|q| serde_json::json!(["CL.THROTTLE", "py", 4, 2, 1, q]))
                .collect();
            (
                serde_json::json!({ "pipeline": pipeline }),
                serde_json::json!(want),
            )
        } else {
            let quantity = rng.i64(0..3);
            let protocol = if step % 2 == 0 { 2 } else { 3 };
            let want = model.call(now, b"py", 4, 2, 1, quantity);
            (
                serde_json::json!({"protocol": protocol, "args": ["CL.THROTTLE", "py", 4, 2, 1, quantity]}),
                serde_json::json!(want),
            )
        };
        let got = tokio::task::block_in_place(|| exchange(Some(line.to_string())));
        let got: serde_json::Value = serde_json::from_str(&got).expect("a JSON line");
        assert_eq!(got, want, "step {step}");
    }
    drop(exchange);
    assert!(python.wait().unwrap().success());
    s.stop().await;
}

#[tokio::test]
async fn redis_benchmark_drives_it() {
    if !installed("redis-benchmark") {
        return;
    }
    let s = with_password("pw").await;
    let port = s.resp_port.to_string();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("redis-benchmark")
            .args([
                "-p", &port, "-a", "pw", "-n", "4000", "-c", "4", "-P", "8", "-r", "1000",
            ])
            .args(["-q", "CL.THROTTLE", "k:__rand_int__", "15", "30", "60", "1"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("requests per second"),
        "{out:?}"
    );
    let metrics = s.get("/metrics").await.1;
    let count = |outcome: &str| {
        crate::support::metric(
            &metrics,
            &format!("cellrate_throttle_calls_total{{via=\"resp\",outcome=\"{outcome}\"}}"),
        )
        .unwrap()
    };
    // The clock stands still: 1,000 keys of 16 take 4,000 calls without a refusal.
    assert_eq!(
        (count("allowed"), count("limited"), count("invalid")),
        (4000.0, 0.0, 0.0)
    );
    s.stop().await;
}

/// The README's two lines: the binary with `--resp-port` alone (no config directory), then
/// `redis-cli -p <port> CL.THROTTLE user123 15 30 60 1`.
#[test]
fn the_readme_command_on_the_binary() {
    if !installed("redis-cli") {
        return;
    }
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
            .to_string()
    };
    let (resp, grpc, http) = (free(), free(), free());
    let mut server = crate::support::binary()
        .args([
            "--resp-port",
            &resp,
            "--grpc-port",
            &grpc,
            "--http-port",
            &http,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", resp.parse::<u16>().unwrap())).is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = Command::new("redis-cli")
        .args(["-p", &resp, "CL.THROTTLE", "user123", "15", "30", "60", "1"])
        .output()
        .unwrap();
    let _ = Command::new("kill").arg(server.id().to_string()).status();
    let exit = server.wait().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0\n16\n15\n-1\n2\n");
    assert!(exit.success(), "{exit:?}");
}
