//! A stand-in Redis on loopback that answers as an older server would: `PING`, `ROLE` (a
//! primary) and `+OK` to the rest, and one fixed error reply to every script call. It shows
//! how the client handles replies that redis-server 7 no longer sends, such as the script
//! errors of Redis 5 and 6, which wrap the error a command inside the script raised.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub struct StandIn {
    pub port: u16,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
}

impl StandIn {
    /// A server whose every `EVAL`/`EVALSHA` gets `script_error` (one line, without `-`).
    pub fn start(script_error: &str) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicU64::new(0));
        let reply = format!("-{script_error}\r\n");
        let (s, a) = (stop.clone(), accepted.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        a.fetch_add(1, Ordering::SeqCst);
                        let (reply, s) = (reply.clone(), s.clone());
                        std::thread::spawn(move || serve(conn, &reply, &s));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        StandIn {
            port,
            stop,
            accepted,
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Answers each command (a RESP array of bulk strings) on `conn` until it closes.
fn serve(conn: TcpStream, script_error: &str, stop: &AtomicBool) {
    conn.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut writer = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    while !stop.load(Ordering::SeqCst) {
        let Some(args) = read_command(&mut reader) else {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            continue;
        };
        if args.is_empty() {
            return;
        }
        let reply = match args[0].to_ascii_uppercase().as_str() {
            "PING" => "+PONG\r\n".to_owned(),
            "ROLE" => "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n".to_owned(),
            "EVAL" | "EVALSHA" => script_error.to_owned(),
            _ => "+OK\r\n".to_owned(),
        };
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// One command's arguments; `Some(vec![])` when the connection closed, `None` on a read
/// timeout before a command started.
fn read_command(reader: &mut BufReader<TcpStream>) -> Option<Vec<String>> {
    let mut line = String::new();
    match reader.read_line(&mut line) {
        Ok(0) => return Some(Vec::new()),
        Ok(_) => {}
        Err(_) => return None,
    }
    let n: usize = line.trim().strip_prefix('*')?.parse().ok()?;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        let mut header = String::new();
        while reader.read_line(&mut header).is_err() {}
        let len: usize = header.trim().strip_prefix('$')?.parse().ok()?;
        let mut arg = vec![0u8; len + 2];
        let mut read = 0;
        while read < arg.len() {
            match std::io::Read::read(reader, &mut arg[read..]) {
                Ok(0) => return Some(Vec::new()),
                Ok(k) => read += k,
                Err(_) => continue,
            }
        }
        arg.truncate(len);
        args.push(String::from_utf8_lossy(&arg).into_owned());
    }
    Some(args)
}
