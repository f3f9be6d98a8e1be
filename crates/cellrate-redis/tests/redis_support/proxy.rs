//! A fault-injecting TCP proxy on loopback, between the limiter and a real `redis-server`:
//! it forwards bytes both ways until told to freeze the connections open at the time (they
//! stay open and silent, as behind a failed-over virtual IP, a NAT that dropped its state or a
//! stopped host; what the client sends on them is kept for the test to count, never
//! forwarded), reset them, delay replies, or freeze once a number of reply bytes has passed.
//! New connections are forwarded normally whatever happened to the old ones, to an upstream
//! that can be moved (a name or virtual IP pointed at another server after a failover).
//! Threads poll every few milliseconds and all end when the proxy is dropped.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the threads look at their flags.
const POLL: Duration = Duration::from_millis(2);

/// A proxy from `127.0.0.1:port` to a loopback upstream port.
pub struct FaultProxy {
    pub port: u16,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    conns: Mutex<Vec<Arc<Link>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Delay before each chunk of reply bytes is forwarded, in microseconds.
    delay_us: AtomicU64,
    /// Reply bytes still forwarded before every open connection freezes; negative: no limit.
    budget: AtomicI64,
    /// The port new connections are forwarded to.
    upstream: AtomicU16,
    /// Connections accepted so far.
    accepted: AtomicU64,
    /// Chunks of reply bytes forwarded to clients so far.
    replies: AtomicU64,
}

/// One proxied connection. The pumps hold clones of the two streams and drop them within a
/// poll once `closed` is set, so that the sockets close (with a reset, after `reset`).
struct Link {
    client: Mutex<Option<TcpStream>>,
    server: Mutex<Option<TcpStream>>,
    frozen: AtomicBool,
    closed: AtomicBool,
    /// What the client sent while the link was frozen, lost on the way.
    lost: Mutex<Vec<u8>>,
}

impl FaultProxy {
    /// A proxy to `127.0.0.1:upstream`.
    pub fn start(upstream: u16) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        shared.budget.store(-1, Ordering::SeqCst);
        shared.upstream.store(upstream, Ordering::SeqCst);
        let accept = {
            let shared = shared.clone();
            std::thread::spawn(move || accept_loop(&listener, &shared))
        };
        FaultProxy {
            port,
            shared,
            threads: vec![accept],
        }
    }

    /// `redis://127.0.0.1:PORT` of the proxy.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Connections open now stop forwarding in both directions and stay open.
    pub fn freeze_open(&self) {
        for link in self.open() {
            link.frozen.store(true, Ordering::SeqCst);
        }
    }

    /// Connections open now are reset (RST to the client) and closed.
    pub fn reset_open(&self) {
        for link in self.open() {
            if let Some(client) = link.client.lock().unwrap().as_ref() {
                reset(client);
            }
            link.close(false);
        }
    }

    /// Each chunk of reply bytes is held `delay` before it is forwarded.
    pub fn delay_replies(&self, delay: Duration) {
        let us = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.shared.delay_us.store(us, Ordering::SeqCst);
    }

    /// After `bytes` more reply bytes, every open connection freezes.
    pub fn freeze_after_reply_bytes(&self, bytes: i64) {
        self.shared.budget.store(bytes, Ordering::SeqCst);
    }

    /// New connections go to `127.0.0.1:upstream`; open ones stay where they are.
    pub fn retarget(&self, upstream: u16) {
        self.shared.upstream.store(upstream, Ordering::SeqCst);
    }

    /// How many chunks of reply bytes the proxy has forwarded so far.
    pub fn replies_forwarded(&self) -> u64 {
        self.shared.replies.load(Ordering::SeqCst)
    }

    /// How many connections the proxy has accepted so far.
    pub fn accepted_connections(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// How many times `command` (such as `EVALSHA`) was sent on a connection while it was
    /// frozen: calls lost on a dead path.
    pub fn sent_while_frozen(&self, command: &str) -> usize {
        let conns = self.shared.conns.lock().unwrap();
        conns
            .iter()
            .map(|link| {
                let lost = link.lost.lock().unwrap();
                lost.windows(command.len())
                    .filter(|w| w.eq_ignore_ascii_case(command.as_bytes()))
                    .count()
            })
            .sum()
    }

    fn open(&self) -> Vec<Arc<Link>> {
        let conns = self.shared.conns.lock().unwrap();
        conns
            .iter()
            .filter(|l| !l.closed.load(Ordering::SeqCst))
            .cloned()
            .collect()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for link in self.shared.conns.lock().unwrap().iter() {
            link.close(true);
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        let pumps: Vec<_> = self.shared.threads.lock().unwrap().drain(..).collect();
        for thread in pumps {
            let _ = thread.join();
        }
    }
}

impl Link {
    /// Marks the link closed and drops its streams (the pumps drop their clones within a
    /// poll); `orderly` sends FINs first.
    fn close(&self, orderly: bool) {
        self.closed.store(true, Ordering::SeqCst);
        for stream in [&self.client, &self.server] {
            if let Some(s) = stream.lock().unwrap().take() {
                if orderly {
                    let _ = s.shutdown(Shutdown::Both);
                }
            }
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        let client = match listener.accept() {
            Ok((client, _)) => client,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(POLL);
                continue;
            }
            Err(_) => return,
        };
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        let upstream = shared.upstream.load(Ordering::SeqCst);
        let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
            reset(&client);
            continue;
        };
        client.set_nonblocking(false).unwrap();
        for s in [&client, &server] {
            s.set_nodelay(true).unwrap();
            s.set_read_timeout(Some(POLL)).unwrap();
        }
        let streams = [
            (
                server.try_clone().unwrap(),
                client.try_clone().unwrap(),
                true,
            ),
            (
                client.try_clone().unwrap(),
                server.try_clone().unwrap(),
                false,
            ),
        ];
        let link = Arc::new(Link {
            client: Mutex::new(Some(client)),
            server: Mutex::new(Some(server)),
            frozen: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            lost: Mutex::new(Vec::new()),
        });
        shared.conns.lock().unwrap().push(link.clone());
        let mut threads = shared.threads.lock().unwrap();
        for (from, to, to_client) in streams {
            let (link, shared) = (link.clone(), shared.clone());
            threads.push(std::thread::spawn(move || {
                pump(&link, from, to, to_client, &shared)
            }));
        }
    }
}

/// Forwards `from` to `to` (one direction of `link`) until the link closes or the proxy stops.
fn pump(link: &Link, mut from: TcpStream, mut to: TcpStream, to_client: bool, shared: &Shared) {
    let mut buf = vec![0u8; 64 * 1024];
    while !shared.stop.load(Ordering::SeqCst) && !link.closed.load(Ordering::SeqCst) {
        if link.frozen.load(Ordering::SeqCst) {
            // Requests are read and kept, as a dead path would swallow them; an end of stream
            // goes no further either. Replies stay where they are.
            if to_client {
                std::thread::sleep(POLL);
            } else if let Ok(n @ 1..) = from.read(&mut buf) {
                link.lost.lock().unwrap().extend_from_slice(&buf[..n]);
            } else {
                std::thread::sleep(POLL);
            }
            continue;
        }
        let n = match from.read(&mut buf) {
            Ok(0) => return link.close(true),
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => return link.close(true),
        };
        if link.frozen.load(Ordering::SeqCst) {
            // Frozen while reading: the bytes are lost, as on a dead path.
            if !to_client {
                link.lost.lock().unwrap().extend_from_slice(&buf[..n]);
            }
            continue;
        }
        let mut n = n;
        if to_client {
            let delay = shared.delay_us.load(Ordering::SeqCst);
            if delay > 0 {
                std::thread::sleep(Duration::from_micros(delay));
            }
            let budget = shared.budget.load(Ordering::SeqCst);
            if budget >= 0 {
                n = n.min(usize::try_from(budget).unwrap());
                shared.budget.fetch_sub(n as i64, Ordering::SeqCst);
                if budget as usize == n {
                    for other in shared.conns.lock().unwrap().iter() {
                        other.frozen.store(true, Ordering::SeqCst);
                    }
                    shared.budget.store(-1, Ordering::SeqCst);
                }
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            return link.close(true);
        }
        if to_client {
            shared.replies.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Makes the last close of `stream` send a reset (SO_LINGER 0) rather than an orderly FIN.
fn reset(stream: &TcpStream) {
    // Best effort: a proxy whose linger cannot be set closes with a FIN, which the tests of
    // resets would then report as a failure of their own.
    let _ = socket2::SockRef::from(stream).set_linger(Some(std::time::Duration::ZERO));
}
