//! Hostile RESP input: each gets Redis's protocol error and a closed connection, or an error
//! reply; buffers and connections stay within their bounds; nothing is admitted that should
//! not be, and the server keeps serving everyone else.

use crate::resp_client::{frame, Client, Reply};
use crate::support::Running;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Sends `bytes` on a fresh connection (however much of them the server takes): the replies
/// read before the server closed it (within 30 s).
async fn replies(port: u16, bytes: Vec<u8>) -> Vec<Reply> {
    let mut c = Client::connect(port).await;
    let writer = c.send_in_background(bytes);
    let mut replies = Vec::new();
    while let Some(reply) = c.reply().await {
        replies.push(reply);
    }
    writer.await.unwrap();
    replies
}

fn protocol_error(text: &str) -> Reply {
    Reply::Error(format!("ERR Protocol error: {text}"))
}

#[tokio::test]
async fn malformed_frames_are_answered_and_closed() {
    let s = Running::start(&[], |_| {}).await;
    let victim = frame(&[b"CL.THROTTLE", b"victim", b"0", b"1", b"60", b"1"]);
    let mut nested = b"*1\r\n".repeat(20_000);
    nested.extend_from_slice(&victim);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (nested, "expected '$'"),
        (b"*1\r\n$1099511627776\r\n".to_vec(), "invalid bulk length"),
        (b"*2\r\n$-5\r\n".to_vec(), "invalid bulk length"),
        (b"*x\r\n".to_vec(), "invalid multibulk length"),
        (b"*100000\r\n".to_vec(), "invalid multibulk length"),
        (
            [b"*".as_slice(), &[b'9'; 64]].concat(),
            "too big mbulk count string",
        ),
        (
            [b"*1\r\n$2\r\nPING".as_slice(), b"\r\n"].concat(),
            "bulk string not followed by CRLF",
        ),
        (vec![0x16; 70_000], "too big inline request"),
        (
            [victim.as_slice(), b"*1\r\n$3\r\nPINGG\r\n"].concat(),
            "bulk string not followed by CRLF",
        ),
    ];
    for (bytes, error) in cases {
        let mut got = replies(s.resp_port, bytes).await;
        if let Some(Reply::Array(_)) = got.first() {
            // The whole command before the broken one was run: the victim's own call.
            assert_eq!(got.remove(0).ints(), [0, 1, 0, -1, 60]);
        }
        assert_eq!(
            got,
            [protocol_error(error)],
            "then the error, then the close"
        );
    }
    // The victim was called once, by the one whole command sent; nested arrays ran nothing.
    let mut c = Client::connect(s.resp_port).await;
    let peek = c
        .call(&["CL.THROTTLE", "victim", "0", "1", "60", "0"])
        .await;
    assert_eq!(peek.ints()[2..], [0, -1, 60]);
    let metrics = s.get("/metrics").await.1;
    assert!(
        metrics.contains("cellrate_resp_protocol_errors_total 9"),
        "{metrics}"
    );
    s.stop().await;
}

/// A key of a megabyte is refused at its header, before it is buffered; a key just within
/// the bound is a key like any other.
#[tokio::test]
async fn a_key_of_a_megabyte() {
    let s = Running::start(&[], |_| {}).await;
    let key = vec![b'k'; 1 << 20];
    let big = frame(&[b"CL.THROTTLE", &key, b"1", b"1", b"1"]);
    assert_eq!(
        replies(s.resp_port, big).await,
        [protocol_error("invalid bulk length")]
    );
    let mut c = Client::connect(s.resp_port).await;
    let within = vec![b'k'; 60_000];
    let args: [&[u8]; 5] = [b"CL.THROTTLE", &within, b"1", b"1", b"10"];
    c.send(&frame(&args)).await;
    assert_eq!(c.reply().await.unwrap().ints(), [0, 2, 1, -1, 10]);
    s.stop().await;
}

/// Half a command, then nothing: closed after `--resp-timeout-ms`. A connection with nothing
/// pending is not (idle connections stay, as Redis's do by default).
#[tokio::test]
async fn half_a_frame_then_a_stall() {
    let s = Running::start(&[], |settings| settings.resp_timeout_ms = 300).await;
    let mut idle = Client::connect(s.resp_port).await;
    let mut stalled = Client::connect(s.resp_port).await;
    let started = Instant::now();
    stalled.send(b"*5\r\n$11\r\nCL.THROTTLE\r\n$6\r\nvic").await;
    assert!(stalled.closed().await);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(idle.call(&["PING"]).await, Reply::Status("PONG".into()));
    s.stop().await;
}

const HOLDER: &str = r#"
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
served = refused = 0
for s in socks:
    try:
        s.sendall(b"PING\r\n")
    except OSError:
        pass
for s in socks:
    s.settimeout(30)
    try:
        line = s.recv(64)
    except OSError:
        line = b""
    if line.startswith(b"+PONG"):
        served += 1
    elif line.startswith(b"-ERR max number of clients reached") or line == b"":
        refused += 1
print(served, refused, flush=True)
sys.stdin.read()
"#;

/// Thousands of connections held idle by another process: at most `--resp-max-connections`
/// are served, the others are told so and closed, and once they go, new clients are served.
#[tokio::test]
async fn thousands_of_idle_connections() {
    let s = Running::start(&[], |settings| settings.resp_max_connections = 1_000).await;
    let mut holder = Command::new("python3")
        .args(["-c", HOLDER, &s.resp_port.to_string(), "2000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    let stdout = holder.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    assert_eq!(line.trim(), "1000 1000", "served and refused");
    assert_eq!(
        replies(s.resp_port, Vec::new()).await,
        [Reply::Error("ERR max number of clients reached".into())]
    );
    let metrics = s.get("/metrics").await.1;
    assert!(
        metrics.contains("cellrate_resp_connections 1000"),
        "{metrics}"
    );
    let _ = holder.stdin.take().unwrap().write_all(b"done");
    let _ = holder.wait();
    // The held connections are gone: a new client is served (within a generous deadline).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut c = Client::connect(s.resp_port).await;
        c.send(b"PING\r\n").await;
        if c.reply().await == Some(Reply::Status("PONG".into())) {
            break;
        }
        assert!(Instant::now() < deadline, "no room came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s.stop().await;
}
