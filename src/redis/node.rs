//! One Redis server: a multiplexed connection that is replaced when it falls silent or drops,
//! and a circuit breaker that fails calls at once, unsent, while the server is known to be down.
//!
//! States: *up* (calls use the connection), *connecting* (calls wait for the attempt, within
//! their deadline), *down* (calls fail at once with [`Error::Unavailable`]; a background task
//! probes the server every `probe_interval` and brings the node up when a connection and a
//! `PING` succeed). A connection is replaced when a call on it fails with a dropped
//! connection, or when `silent_timeouts` calls in a row time out with no reply at all on it
//! since they were sent: a connection frozen by a failover, a NAT or a dead host stays open,
//! and only its silence tells.

use super::error::Error;
use super::options::RedisOptions;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, RedisResult};
use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// A cheap-to-clone handle on one server's connection.
#[derive(Clone)]
pub(crate) struct Node {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    /// `host:port`, for error messages.
    addr: String,
    settings: Settings,
    state: RwLock<State>,
    /// Woken when a connection attempt ends (up or down).
    settled: Notify,
    /// The generation of the connection in use; a report about an older one is ignored.
    generation: AtomicU64,
    /// Microseconds since `epoch` of the last reply on the current connection.
    last_reply_us: AtomicU64,
    /// Calls in a row that timed out with no reply on the current connection.
    silent: AtomicU32,
    epoch: Instant,
}

#[derive(Clone, Copy)]
struct Settings {
    connection_timeout: Duration,
    probe_interval: Duration,
    silent_timeouts: u32,
    attempts: usize,
}

enum State {
    Up(MultiplexedConnection),
    Connecting,
    Down(String),
}

impl Node {
    /// A node for `client`, connected (within the connection timeout) on return.
    pub(crate) async fn connect(client: Client, options: &RedisOptions) -> Result<Node, Error> {
        let node = Node::new(client, options);
        let conn = node.inner.attempt().await?;
        node.inner.up(conn);
        Ok(node)
    }

    /// A node that connects in the background; calls wait for the first attempt within their
    /// deadline. Needs a Tokio runtime.
    pub(crate) fn connect_lazy(client: Client, options: &RedisOptions) -> Node {
        let node = Node::new(client, options);
        tokio::spawn(reconnect(Arc::downgrade(&node.inner)));
        node
    }

    fn new(client: Client, options: &RedisOptions) -> Node {
        let addr = client.get_connection_info().addr().to_string();
        Node {
            inner: Arc::new(Inner {
                client,
                addr,
                settings: Settings {
                    connection_timeout: options.connection_timeout,
                    probe_interval: options.probe_interval,
                    silent_timeouts: options.silent_timeouts.max(1),
                    attempts: options.reconnect_retries.saturating_add(1),
                },
                state: RwLock::new(State::Connecting),
                settled: Notify::new(),
                generation: AtomicU64::new(0),
                last_reply_us: AtomicU64::new(0),
                silent: AtomicU32::new(0),
                epoch: Instant::now(),
            }),
        }
    }

    /// `host:port` of the server.
    pub(crate) fn addr(&self) -> &str {
        &self.inner.addr
    }

    /// Whether calls currently fail at once (the server is known to be down).
    pub(crate) fn is_down(&self) -> bool {
        matches!(*self.inner.read(), State::Down(_))
    }

    /// Runs `call` on the connection within `deadline`. Never sent (a known failure,
    /// [`Error::Unavailable`]) when the node is down or no connection comes up in time;
    /// [`Error::Timeout`] (outcome unknown) when it was sent and no reply came in time.
    pub(crate) async fn run<T, F, Fut>(&self, deadline: Duration, call: F) -> Result<T, Error>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let started = Instant::now();
        let (conn, generation) = match tokio::time::timeout(deadline, self.connection()).await {
            Ok(ready) => ready?,
            Err(_) => {
                return Err(Error::Unavailable(format!(
                    "{}: no connection within the {deadline:?} deadline",
                    self.inner.addr
                )))
            }
        };
        let sent_us = self.inner.micros();
        let left = deadline.saturating_sub(started.elapsed());
        match tokio::time::timeout(left, call(conn)).await {
            Ok(Ok(value)) => {
                self.inner.replied(generation);
                Ok(value)
            }
            Ok(Err(e)) if e.is_io_error() || e.is_connection_dropped() => {
                self.inner.replace(generation);
                Err(Error::ConnectionLost(format!("{}: {e}", self.inner.addr)))
            }
            Ok(Err(e)) => {
                // An error reply is a reply: the connection is alive.
                self.inner.replied(generation);
                Err(Error::from(e))
            }
            Err(_) => {
                self.inner.timed_out(generation, sent_us);
                Err(Error::Timeout(deadline))
            }
        }
    }

    /// The connection in use and its generation; waits while one is being made.
    async fn connection(&self) -> Result<(MultiplexedConnection, u64), Error> {
        loop {
            let settled = self.inner.settled.notified();
            let mut settled = std::pin::pin!(settled);
            // Registered before the state is read, so a change in between is not missed.
            settled.as_mut().enable();
            match &*self.inner.read() {
                State::Up(conn) => {
                    // Relaxed: read under the state lock, which `up` holds when it changes
                    // the connection and its generation together.
                    let generation = self.inner.generation.load(Ordering::Relaxed);
                    return Ok((conn.clone(), generation));
                }
                State::Down(cause) => {
                    return Err(Error::Unavailable(format!(
                        "{} is down ({cause}); not sent",
                        self.inner.addr
                    )))
                }
                State::Connecting => {}
            }
            settled.await;
        }
    }
}

impl Inner {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    fn micros(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// One connection attempt, `PING` included, bounded by the connection timeout as a whole.
    async fn attempt(&self) -> Result<MultiplexedConnection, Error> {
        let timeout = self.settings.connection_timeout;
        // No response timeout of the client's own: the limiter's deadline is the only one, so
        // every timeout is `Error::Timeout` and counts toward replacing the connection.
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(None);
        let connect = async {
            let mut conn = self
                .client
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            redis::cmd("PING").query_async::<()>(&mut conn).await?;
            Ok::<_, redis::RedisError>(conn)
        };
        // Nothing of a call is sent before a connection is up: every failure here is known.
        match tokio::time::timeout(timeout, connect).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(Error::Unavailable(format!("{}: {e}", self.addr))),
            Err(_) => Err(Error::Unavailable(format!(
                "{}: no connection within the {timeout:?} connection timeout",
                self.addr
            ))),
        }
    }

    fn up(&self, conn: MultiplexedConnection) {
        let mut state = self.write();
        // Relaxed: all three change under the state lock; the counters are hints.
        self.silent.store(0, Ordering::Relaxed);
        self.last_reply_us.store(self.micros(), Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::Relaxed);
        *state = State::Up(conn);
        drop(state);
        self.settled.notify_waiters();
    }

    fn down(&self, cause: String) {
        *self.write() = State::Down(cause);
        self.settled.notify_waiters();
    }

    /// A reply came on connection `generation`: it is alive.
    fn replied(&self, generation: u64) {
        // Relaxed: the generation only filters stale reports; the counters are hints that
        // publish nothing.
        if self.generation.load(Ordering::Relaxed) == generation {
            self.silent.store(0, Ordering::Relaxed);
            self.last_reply_us.store(self.micros(), Ordering::Relaxed);
        }
    }

    /// A call sent at `sent_us` on connection `generation` timed out: if nothing at all came
    /// back on it since, the connection is silent, and after enough such calls it is replaced.
    fn timed_out(self: &Arc<Self>, generation: u64, sent_us: u64) {
        // Relaxed: see `replied`; a stale read costs at most one replacement too many or too
        // late, never a decision.
        if self.generation.load(Ordering::Relaxed) != generation
            || self.last_reply_us.load(Ordering::Relaxed) > sent_us
        {
            return;
        }
        // Relaxed: a tally of hints, as above.
        if self.silent.fetch_add(1, Ordering::Relaxed) + 1 >= self.settings.silent_timeouts {
            self.replace(generation);
        }
    }

    /// Drops connection `generation` (if still in use) and connects again in the background.
    fn replace(self: &Arc<Self>, generation: u64) {
        {
            let mut state = self.write();
            // Relaxed: read under the write lock, which orders it with `up`.
            if !matches!(*state, State::Up(_))
                || self.generation.load(Ordering::Relaxed) != generation
            {
                return;
            }
            *state = State::Connecting;
        }
        tokio::spawn(reconnect(Arc::downgrade(self)));
    }
}

/// Connects again: a few attempts at once, then (still failing) marks the node down and probes
/// it every `probe_interval` until it answers. Ends when the limiter is dropped.
async fn reconnect(node: Weak<Inner>) {
    let mut attempts = 0usize;
    loop {
        let Some(inner) = node.upgrade() else { return };
        match inner.attempt().await {
            Ok(conn) => return inner.up(conn),
            Err(e) => {
                attempts += 1;
                if attempts >= inner.settings.attempts && !matches!(*inner.read(), State::Down(_)) {
                    inner.down(e.to_string());
                }
            }
        }
        if attempts >= inner.settings.attempts {
            let pause = inner.settings.probe_interval;
            drop(inner);
            tokio::time::sleep(pause).await;
        }
    }
}
