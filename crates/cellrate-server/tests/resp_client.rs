//! A RESP client for the tests: commands written as arrays of bulk strings (or raw bytes), and
//! replies read whole, RESP2 or RESP3.

use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// A reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Null,
    Array(Vec<Reply>),
    Map(Vec<(Reply, Reply)>),
}

impl Reply {
    /// The integers of an array of integers.
    pub fn ints(&self) -> Vec<i64> {
        match self {
            Reply::Array(items) => items
                .iter()
                .map(|i| match i {
                    Reply::Int(n) => *n,
                    other => panic!("not an integer: {other:?}"),
                })
                .collect(),
            other => panic!("not an array: {other:?}"),
        }
    }

    /// The text of an error.
    pub fn error(&self) -> &str {
        match self {
            Reply::Error(e) => e,
            other => panic!("not an error: {other:?}"),
        }
    }
}

/// One connection.
pub struct Client {
    reader: BufReader<OwnedReadHalf>,
    writer: Option<OwnedWriteHalf>,
}

/// A command as RESP bytes.
pub fn frame(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

impl Client {
    pub async fn connect(port: u16) -> Client {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (read, write) = stream.into_split();
        Client {
            reader: BufReader::new(read),
            writer: Some(write),
        }
    }

    /// Sends `args` and reads the reply.
    pub async fn call(&mut self, args: &[&str]) -> Reply {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send(&frame(&args)).await;
        self.reply().await.expect("a reply")
    }

    /// Writes raw bytes.
    pub async fn send(&mut self, bytes: &[u8]) {
        let writer = self.writer.as_mut().expect("the writing half");
        writer.write_all(bytes).await.unwrap();
    }

    /// Writes `bytes` from a task of its own, ignoring a server that closes before taking them
    /// all, while this client reads.
    pub fn send_in_background(&mut self, bytes: Vec<u8>) -> tokio::task::JoinHandle<()> {
        let mut writer = self.writer.take().expect("the writing half");
        tokio::spawn(async move {
            if writer.write_all(&bytes).await.is_ok() {
                let _ = writer.shutdown().await;
            }
        })
    }

    /// Reads one reply; `None` at the end of the stream.
    pub async fn reply(&mut self) -> Option<Reply> {
        let read = Box::pin(self.read_reply());
        tokio::time::timeout(Duration::from_secs(30), read)
            .await
            .expect("a reply within 30 s")
    }

    /// Whether the server closed the connection (within 30 s), reading what is left.
    pub async fn closed(&mut self) -> bool {
        let mut rest = Vec::new();
        let read = self.reader.read_to_end(&mut rest);
        matches!(
            tokio::time::timeout(Duration::from_secs(30), read).await,
            Ok(Ok(_)) | Ok(Err(_))
        )
    }

    async fn line(&mut self) -> Option<String> {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).await.ok()?;
        (n > 0).then(|| line.trim_end_matches("\r\n").to_owned())
    }

    async fn read_reply(&mut self) -> Option<Reply> {
        let line = self.line().await?;
        let (kind, rest) = line.split_at(1);
        Some(match kind {
            "+" => Reply::Status(rest.to_owned()),
            "-" => Reply::Error(rest.to_owned()),
            ":" => Reply::Int(rest.parse().unwrap()),
            "_" => Reply::Null,
            "$" => {
                let len: i64 = rest.parse().unwrap();
                if len < 0 {
                    return Some(Reply::Null);
                }
                let mut data = vec![0; len as usize + 2];
                self.reader.read_exact(&mut data).await.ok()?;
                data.truncate(len as usize);
                Reply::Bulk(data)
            }
            "*" => {
                let n: usize = rest.parse().unwrap();
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(Box::pin(self.read_reply()).await?);
                }
                Reply::Array(items)
            }
            "%" => {
                let n: usize = rest.parse().unwrap();
                let mut pairs = Vec::with_capacity(n);
                for _ in 0..n {
                    let k = Box::pin(self.read_reply()).await?;
                    let v = Box::pin(self.read_reply()).await?;
                    pairs.push((k, v));
                }
                Reply::Map(pairs)
            }
            other => panic!("unknown reply type {other:?} in {line:?}"),
        })
    }
}
