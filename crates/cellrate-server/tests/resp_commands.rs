//! The RESP commands around `CL.THROTTLE`, as Redis 7 answers them: the connection commands
//! clients send when they connect, `AUTH` with and without a password set, RESP3 after
//! `HELLO 3`, pipelining, and what the metrics count.

use crate::resp_client::{frame, Client, Reply};
use crate::support::Running;

fn bulk(text: &str) -> Reply {
    Reply::Bulk(text.as_bytes().to_vec())
}

fn error(text: &str) -> Reply {
    Reply::Error(text.to_owned())
}

fn ok() -> Reply {
    Reply::Status("OK".to_owned())
}

#[tokio::test]
async fn connection_commands() {
    let s = Running::start(&[], |_| {}).await;
    let mut c = Client::connect(s.resp_port).await;
    assert_eq!(c.call(&["PING"]).await, Reply::Status("PONG".into()));
    assert_eq!(c.call(&["ping", "hi"]).await, bulk("hi"));
    assert_eq!(
        c.call(&["PING", "a", "b"]).await,
        error("ERR wrong number of arguments for 'ping' command")
    );
    assert_eq!(c.call(&["ECHO", "x y"]).await, bulk("x y"));
    assert_eq!(c.call(&["SELECT", "0"]).await, ok());
    assert_eq!(
        c.call(&["SELECT", "1"]).await,
        error("ERR DB index is out of range")
    );
    assert_eq!(
        c.call(&["SELECT", "x"]).await,
        error("ERR value is not an integer or out of range")
    );
    assert_eq!(c.call(&["CLIENT", "SETNAME", "app"]).await, ok());
    assert_eq!(c.call(&["CLIENT", "GETNAME"]).await, bulk("app"));
    assert_eq!(
        c.call(&["CLIENT", "SETNAME", "a b"]).await,
        error("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(
        c.call(&["CLIENT", "SETINFO", "LIB-NAME", "redis-py"]).await,
        ok()
    );
    assert_eq!(
        c.call(&["CLIENT", "SETINFO", "LIB-VER", "5.0.0"]).await,
        ok()
    );
    assert!(matches!(c.call(&["CLIENT", "ID"]).await, Reply::Int(_)));
    let Reply::Bulk(info) = c.call(&["CLIENT", "INFO"]).await else {
        panic!("CLIENT INFO is a bulk string");
    };
    let info = String::from_utf8(info).unwrap();
    assert!(
        info.contains("name=app") && info.contains("lib-name=redis-py"),
        "{info}"
    );
    assert_eq!(
        c.call(&["CLIENT", "KILL", "x"]).await,
        error("ERR unknown subcommand 'KILL'. Try CLIENT HELP.")
    );
    assert_eq!(
        c.call(&["SET", "k", "v"]).await,
        error("ERR unknown command 'SET', with args beginning with: 'k' 'v' ")
    );
    assert_eq!(
        c.call(&["ECHO"]).await,
        error("ERR wrong number of arguments for 'echo' command")
    );
    assert_eq!(c.call(&["COMMAND", "COUNT"]).await, Reply::Int(12));
    let Reply::Array(infos) = c.call(&["COMMAND", "INFO", "cl.throttle", "nope"]).await else {
        panic!("COMMAND INFO is an array");
    };
    let Reply::Array(info) = &infos[0] else {
        panic!("an array per command");
    };
    assert_eq!(
        (&info[0], &info[1]),
        (&bulk("cl.throttle"), &Reply::Int(-1))
    );
    assert_eq!(infos[1], Reply::Null);
    let Reply::Array(docs) = c.call(&["COMMAND", "DOCS", "ping"]).await else {
        panic!("COMMAND DOCS is a flat array in RESP2");
    };
    assert_eq!(docs[0], bulk("ping"));
    let Reply::Array(config) = c.call(&["CONFIG", "GET", "save", "appendonly"]).await else {
        panic!("CONFIG GET is a flat array in RESP2");
    };
    assert_eq!(
        config,
        [bulk("appendonly"), bulk("no"), bulk("save"), bulk("")]
    );
    let Reply::Bulk(text) = c.call(&["INFO"]).await else {
        panic!("INFO is a bulk string");
    };
    assert!(String::from_utf8(text).unwrap().contains("redis_version:"));
    assert_eq!(
        c.call(&["AUTH", "secret"]).await,
        error(
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?"
        )
    );
    assert_eq!(c.call(&["QUIT"]).await, ok());
    assert!(c.closed().await);
    s.stop().await;
}

#[tokio::test]
async fn hello_speaks_resp3_or_refuses_cleanly() {
    let s = Running::start(&[], |_| {}).await;
    let mut c = Client::connect(s.resp_port).await;
    assert_eq!(
        c.call(&["HELLO", "4"]).await,
        error("NOPROTO unsupported protocol version")
    );
    assert_eq!(
        c.call(&["HELLO", "x"]).await,
        error("ERR Protocol version is not an integer or out of range")
    );
    assert_eq!(
        c.call(&["HELLO", "3", "SETNAME"]).await,
        error("ERR Syntax error in HELLO option 'SETNAME'")
    );
    let Reply::Map(hello) = c.call(&["HELLO", "3", "SETNAME", "svc"]).await else {
        panic!("HELLO 3 answers a map");
    };
    assert!(hello.contains(&(bulk("proto"), Reply::Int(3))), "{hello:?}");
    assert_eq!(c.call(&["CLIENT", "GETNAME"]).await, bulk("svc"));
    // In RESP3: nulls and maps of their own types; CL.THROTTLE's reply unchanged.
    assert_eq!(
        c.call(&["COMMAND", "INFO", "nope"]).await,
        Reply::Array(vec![Reply::Null])
    );
    assert!(matches!(
        c.call(&["CONFIG", "GET", "save"]).await,
        Reply::Map(_)
    ));
    let reply = c.call(&["CL.THROTTLE", "user123", "15", "30", "60"]).await;
    assert_eq!(reply.ints(), [0, 16, 15, -1, 2]);
    let Reply::Array(hello) = c.call(&["HELLO", "2"]).await else {
        panic!("HELLO 2 answers a flat array");
    };
    assert_eq!(hello.len(), 14);
    assert_eq!(c.call(&["RESET"]).await, Reply::Status("RESET".into()));
    assert_eq!(c.call(&["CLIENT", "GETNAME"]).await, Reply::Null);
    s.stop().await;
}

#[tokio::test]
async fn a_password_is_required_first() {
    let s = crate::support::with_password("s3cret").await;
    let mut c = Client::connect(s.resp_port).await;
    assert_eq!(
        c.call(&["PING"]).await,
        error("NOAUTH Authentication required.")
    );
    assert_eq!(
        c.call(&["CL.THROTTLE", "k", "1", "1", "1"]).await,
        error("NOAUTH Authentication required.")
    );
    assert!(c
        .call(&["HELLO", "3"])
        .await
        .error()
        .starts_with("NOAUTH HELLO must be called with the client already authenticated"));
    let wrong = "WRONGPASS invalid username-password pair or user is disabled.";
    assert_eq!(c.call(&["AUTH", "guess"]).await, error(wrong));
    assert_eq!(c.call(&["AUTH", "admin", "s3cret"]).await, error(wrong));
    assert_eq!(
        c.call(&["HELLO", "3", "AUTH", "default", "nope"]).await,
        error(wrong)
    );
    assert_eq!(c.call(&["AUTH", "s3cret"]).await, ok());
    assert_eq!(c.call(&["PING"]).await, Reply::Status("PONG".into()));
    // HELLO with AUTH: authenticated and switched in one command.
    let mut d = Client::connect(s.resp_port).await;
    let hello = d
        .call(&["HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "x"])
        .await;
    assert!(matches!(hello, Reply::Map(_)), "{hello:?}");
    assert_eq!(d.call(&["RESET"]).await, Reply::Status("RESET".into()));
    assert_eq!(
        d.call(&["PING"]).await,
        error("NOAUTH Authentication required.")
    );
    let metrics = s.get("/metrics").await.1;
    assert!(
        metrics.contains("cellrate_resp_auth_failures_total 3"),
        "{metrics}"
    );
    s.stop().await;
}

/// A thousand commands in one write are answered in order, in one stream of replies.
#[tokio::test]
async fn pipelining() {
    let s = Running::start(&[], |_| {}).await;
    let mut c = Client::connect(s.resp_port).await;
    let mut batch = Vec::new();
    for i in 0..1_000 {
        let key = format!("k{}", i % 10);
        let args: [&[u8]; 6] = [b"CL.THROTTLE", key.as_bytes(), b"99", b"1", b"60", b"1"];
        batch.extend_from_slice(&frame(&args));
        batch.extend_from_slice(b"PING\r\n");
    }
    c.send(&batch).await;
    for i in 0..1_000 {
        let reply = c.reply().await.unwrap();
        assert_eq!(
            reply.ints(),
            [0, 100, 99 - i / 10, -1, 60 * (i / 10 + 1)],
            "{i}"
        );
        assert_eq!(c.reply().await, Some(Reply::Status("PONG".into())));
    }
    let metrics = s.get("/metrics").await.1;
    assert!(
        metrics.contains("cellrate_throttle_calls_total{via=\"resp\",outcome=\"allowed\"} 1000"),
        "{metrics}"
    );
    assert!(metrics.contains("cellrate_throttle_keys 10"), "{metrics}");
    s.stop().await;
}
