//! RESP, the Redis protocol, on `--resp-port`: redis-cell's `CL.THROTTLE` for any Redis client,
//! and what clients and tools send around it (`PING`, `ECHO`, `QUIT`, `RESET`, `SELECT 0`,
//! `AUTH`, `HELLO` 2 or 3, `CLIENT`, `COMMAND`, `CONFIG GET`, `INFO`), with pipelining.
//!
//! - `listener.rs`: accepts connections, at most `--resp-max-connections` at once;
//! - `connection.rs`: one connection's loop: read, parse, run every whole command, write the
//!   replies of a batch at once, with a timeout on a command half sent and a reply not taken;
//! - `parse.rs`: commands from bytes, bounds checked at each header;
//! - `command.rs`: which command runs, `AUTH` required first if a password is set;
//! - `throttle.rs`: `CL.THROTTLE`; `session.rs`: the connection commands; `introspection.rs`:
//!   `COMMAND`, `CONFIG GET`, `INFO`;
//! - `reply.rs`: replies in RESP2 or RESP3.

mod command;
mod connection;
mod introspection;
mod listener;
mod parse;
mod reply;
mod session;
mod throttle;

pub(crate) use listener::serve;

use crate::server::Server;
use crate::settings::Password;
use parse::Limits;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The Redis version whose replies to the connection commands this server's follow, reported
/// by `HELLO` and `INFO` for clients that read it.
pub(crate) const REDIS_VERSION: &str = "7.0.0";

/// What every connection of a listener shares.
pub(crate) struct Context {
    pub server: Server,
    pub limits: Limits,
    pub password: Option<Password>,
    /// How long a command half sent, or a reply not taken, may wait.
    pub timeout: Duration,
    /// How long a connection may be idle (`None`: for ever).
    pub idle: Option<Duration>,
    pub port: u16,
    pub started: Instant,
    next_id: AtomicU64,
}

impl Context {
    /// The context of a listener on `port` of `server`.
    pub fn new(server: Server, port: u16) -> Context {
        let s = server.settings();
        let limits = Limits {
            max_bytes: s.resp_max_command_bytes as usize,
            max_args: s.resp_max_args as usize,
        };
        Context {
            limits,
            password: s.resp_password.clone(),
            timeout: Duration::from_millis(s.resp_timeout_ms.max(1)),
            idle: (s.resp_idle_secs > 0).then(|| Duration::from_secs(s.resp_idle_secs)),
            port,
            started: Instant::now(),
            next_id: AtomicU64::new(1),
            server,
        }
    }

    /// A new connection's id (`CLIENT ID`).
    pub fn next_id(&self) -> u64 {
        // Relaxed: an id only needs to be unique.
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// One connection's state.
#[derive(Debug)]
pub(crate) struct Session {
    pub id: u64,
    /// Whether `AUTH` succeeded (or no password is set).
    pub authenticated: bool,
    /// `CLIENT SETNAME`.
    pub name: Option<Vec<u8>>,
    /// `CLIENT SETINFO LIB-NAME` and `LIB-VER`.
    pub library: (Option<Vec<u8>>, Option<Vec<u8>>),
    /// Set by `QUIT`: close once the replies are written.
    pub quit: bool,
    /// The peer's address, for `CLIENT INFO`.
    pub peer: String,
}

impl Session {
    /// A new connection's state.
    pub fn new(ctx: &Context, peer: String) -> Session {
        Session {
            id: ctx.next_id(),
            authenticated: ctx.password.is_none(),
            name: None,
            library: (None, None),
            quit: false,
            peer,
        }
    }
}
