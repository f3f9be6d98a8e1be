//! One Redis server: a multiplexed connection that is replaced when it falls silent, drops or
//! lands on a server that cannot take writes, and a circuit breaker that fails calls at once,
//! unsent, while the server is known to be down or too slow.
//!
//! States: *up* (calls use the connection); *connecting* (calls wait for the attempt, within
//! their deadline); *tripped* (the connection answers, but `breaker_timeouts` calls in a row
//! missed their deadline: calls fail at once while a background probe runs a script on it);
//! *down* (no connection: calls fail at once while a background task tries to connect). Every
//! attempt connects, then checks with `ROLE` that the server is a primary. A connection is
//! replaced when a call on it fails with a dropped connection, when a reply says the server
//! cannot take writes (`READONLY`, `MASTERDOWN`, `LOADING`), or when `silent_timeouts` calls in
//! a row time out with no reply at all on it since they were sent: a connection frozen by a
//! failover, a NAT or a dead host stays open, and only its silence tells. A reply that comes
//! after its call's deadline still proves the connection alive. Attempts after the first one
//! wait a backoff that doubles up to 16 probe intervals, with jitter, so that many processes do
//! not reconnect in step.

use super::connector::Connector;
use super::error::Error;
use super::memory::MemoryCell;
use super::options::RedisOptions;
use redis::aio::MultiplexedConnection;
use redis::RedisResult;
use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

mod recovery;
mod reply;
use recovery::{probe_tripped, reconnect};
pub(crate) use reply::Reply;

/// A reply a call is waited for this many deadlines at most after its own has passed: long
/// enough to see a slow server answer, short enough that calls abandoned on a frozen
/// connection do not pile up.
const LATE_REPLY_DEADLINES: u32 = 16;

/// A cheap-to-clone handle on one server's connection.
#[derive(Clone)]
pub(crate) struct Node {
    inner: Arc<Inner>,
}

struct Inner {
    connector: Connector,
    settings: Settings,
    state: RwLock<State>,
    /// Woken when a connection attempt ends (up or down).
    settled: Notify,
    /// The generation of the connection in use; a report about an older one is ignored.
    generation: AtomicU64,
    /// Microseconds since `epoch` of the last reply on the current connection, late or not.
    last_reply_us: AtomicU64,
    /// Calls in a row that timed out with no reply on the current connection.
    silent: AtomicU32,
    /// Calls in a row that timed out, replies or not, on this connection and the ones it
    /// replaced.
    slow: AtomicU32,
    /// Attempts and replacements since the last reply in time: the backoff's exponent.
    strikes: AtomicU32,
    epoch: Instant,
    /// The server's memory settings, read at each connection.
    memory: MemoryCell,
}

#[derive(Clone, Copy)]
struct Settings {
    connection_timeout: Duration,
    probe_interval: Duration,
    deadline: Duration,
    silent_timeouts: u32,
    breaker_timeouts: u32,
    attempts: usize,
}

enum State {
    Up(MultiplexedConnection),
    Tripped(String),
    Connecting,
    Down(String),
}

impl Node {
    /// A node for `connector`, connected (within the connection timeout) on return.
    pub(crate) async fn connect(
        connector: Connector,
        options: &RedisOptions,
    ) -> Result<Node, Error> {
        let node = Node::new(connector, options);
        let conn = node.inner.attempt().await?;
        node.inner.up(conn);
        Ok(node)
    }

    /// A node that connects in the background; calls wait for the first attempt within their
    /// deadline. Needs a Tokio runtime.
    pub(crate) fn connect_lazy(connector: Connector, options: &RedisOptions) -> Node {
        let node = Node::new(connector, options);
        tokio::spawn(reconnect(Arc::downgrade(&node.inner)));
        node
    }

    fn new(connector: Connector, options: &RedisOptions) -> Node {
        Node {
            inner: Arc::new(Inner {
                connector,
                settings: Settings {
                    connection_timeout: options.connection_timeout,
                    probe_interval: options.probe_interval,
                    deadline: options.deadline,
                    silent_timeouts: options.silent_timeouts.max(1),
                    breaker_timeouts: options.breaker_timeouts.max(1),
                    attempts: options.reconnect_retries.saturating_add(1),
                },
                state: RwLock::new(State::Connecting),
                settled: Notify::new(),
                generation: AtomicU64::new(0),
                last_reply_us: AtomicU64::new(0),
                silent: AtomicU32::new(0),
                slow: AtomicU32::new(0),
                strikes: AtomicU32::new(0),
                epoch: Instant::now(),
                memory: MemoryCell::default(),
            }),
        }
    }

    /// `host:port` of the server (or of the service, behind Sentinel).
    pub(crate) fn addr(&self) -> &str {
        self.inner.connector.addr()
    }

    /// The server's memory settings, as last read.
    pub(crate) fn memory(&self) -> &MemoryCell {
        &self.inner.memory
    }

    /// Whether calls currently fail at once (the server is known to be down).
    pub(crate) fn is_down(&self) -> bool {
        matches!(*self.inner.read(), State::Down(_))
    }

    /// Runs `call` on the connection within `deadline`. Never sent (a known failure,
    /// [`Error::Unavailable`]) when the node is down or tripped or no connection comes up in
    /// time; [`Error::Timeout`] (outcome unknown) when it was sent and no reply came in time.
    pub(crate) async fn run<T, F, Fut>(&self, deadline: Duration, call: F) -> Result<T, Error>
    where
        T: Reply + Send + 'static,
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = RedisResult<T>> + Send + 'static,
    {
        let started = Instant::now();
        let (conn, generation) = match tokio::time::timeout(deadline, self.connection()).await {
            Ok(ready) => ready?,
            Err(_) => {
                return Err(Error::Unavailable(format!(
                    "{}: no connection within the {deadline:?} deadline",
                    self.addr()
                )))
            }
        };
        let sent_us = self.inner.micros();
        let left = deadline.saturating_sub(started.elapsed());
        let mut reply = Box::pin(call(conn));
        match tokio::time::timeout(left, &mut reply).await {
            Ok(answer) => self.inner.answered(generation, answer),
            Err(_) => {
                self.inner.timed_out(generation, sent_us);
                // Still waited for, in the background: a late reply proves the connection
                // alive.
                let inner = Arc::downgrade(&self.inner);
                let wait = deadline.saturating_mul(LATE_REPLY_DEADLINES);
                tokio::spawn(async move {
                    if let Ok(answer) = tokio::time::timeout(wait, reply).await {
                        if let Some(inner) = inner.upgrade() {
                            inner.answered_late(generation, &answer);
                        }
                    }
                });
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
                        self.addr()
                    )))
                }
                State::Tripped(cause) => {
                    return Err(Error::Unavailable(format!(
                        "{} {cause}; not sent",
                        self.addr()
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

    /// Whether `generation` is the connection in use.
    fn current(&self, generation: u64) -> bool {
        // Relaxed: the generation only filters stale reports.
        self.generation.load(Ordering::Relaxed) == generation
    }

    /// One connection attempt, the primary check included, bounded by the connection timeout
    /// as a whole.
    async fn attempt(&self) -> Result<MultiplexedConnection, Error> {
        self.try_connect()
            .await
            .map_err(|why| Error::Unavailable(format!("{}: {why}", self.connector.addr())))
    }

    /// [`Inner::attempt`], failing with why.
    async fn try_connect(&self) -> Result<MultiplexedConnection, String> {
        let timeout = self.settings.connection_timeout;
        // Nothing of a call is sent before a connection is up: every failure here is known.
        match tokio::time::timeout(timeout, self.connector.connect(timeout)).await {
            Ok(Ok((conn, memory))) => {
                self.memory.set(self.connector.addr(), memory);
                Ok(conn)
            }
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!(
                "no connection within the {timeout:?} connection timeout"
            )),
        }
    }

    fn up(&self, conn: MultiplexedConnection) {
        let mut state = self.write();
        // Relaxed: all of these change under the state lock; the counters are hints. `slow`
        // is kept: a server that stalls scripts stalls them on every new connection too.
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

    /// The answer to a call on connection `generation` that came within its deadline.
    fn answered<T: Reply>(
        self: &Arc<Self>,
        generation: u64,
        answer: RedisResult<T>,
    ) -> Result<T, Error> {
        match answer {
            Ok(value) if value.not_primary() => {
                self.replace(generation);
                Ok(value)
            }
            Ok(value) => {
                self.replied(generation, true);
                Ok(value)
            }
            Err(e) if e.is_io_error() || e.is_connection_dropped() => {
                self.replace(generation);
                Err(Error::ConnectionLost(format!(
                    "{}: {e}",
                    self.connector.addr()
                )))
            }
            Err(e) => {
                let e = Error::from(e);
                if e.not_primary() {
                    // An answer, but not from a server that takes writes: not a sign of life.
                    self.replace(generation);
                } else {
                    self.replied(generation, true);
                }
                Err(e)
            }
        }
    }

    /// A reply to a call that had passed its deadline: the connection is alive, not fast.
    fn answered_late<T: Reply>(self: &Arc<Self>, generation: u64, answer: &RedisResult<T>) {
        match answer {
            Err(e) if e.is_io_error() || e.is_connection_dropped() => self.replace(generation),
            Ok(value) if value.not_primary() => self.replace(generation),
            Err(e) if Error::from(e.clone()).not_primary() => self.replace(generation),
            _ => self.replied(generation, false),
        }
    }

    /// A reply came on connection `generation`: it is alive; `in_time`, and not slow either.
    fn replied(&self, generation: u64, in_time: bool) {
        // Relaxed: the counters are hints that publish nothing.
        if self.current(generation) {
            self.silent.store(0, Ordering::Relaxed);
            self.last_reply_us.store(self.micros(), Ordering::Relaxed);
            if in_time {
                self.slow.store(0, Ordering::Relaxed);
                self.strikes.store(0, Ordering::Relaxed);
            }
        }
    }

    /// A call sent at `sent_us` on connection `generation` timed out: if nothing at all came
    /// back on it since, the connection is silent, and after enough such calls it is replaced;
    /// after enough timeouts in a row, silent or not, the breaker trips.
    fn timed_out(self: &Arc<Self>, generation: u64, sent_us: u64) {
        // Relaxed: see `replied`; a stale read costs at most one replacement or trip too many
        // or too late, never a decision.
        if !self.current(generation) {
            return;
        }
        let slow = self.slow.fetch_add(1, Ordering::Relaxed) + 1;
        if self.last_reply_us.load(Ordering::Relaxed) <= sent_us
            && self.silent.fetch_add(1, Ordering::Relaxed) + 1 >= self.settings.silent_timeouts
        {
            return self.replace(generation);
        }
        if slow >= self.settings.breaker_timeouts {
            self.trip(generation, slow);
        }
    }

    /// Fails calls at once while a probe checks that scripts run on connection `generation`
    /// within the deadline again.
    fn trip(self: &Arc<Self>, generation: u64, timeouts: u32) {
        let conn = {
            let mut state = self.write();
            let State::Up(conn) = &*state else { return };
            if !self.current(generation) {
                return;
            }
            let conn = conn.clone();
            *state = State::Tripped(format!(
                "is not answering scripts in time ({timeouts} calls in a row timed out)"
            ));
            conn
        };
        tokio::spawn(probe_tripped(Arc::downgrade(self), conn, generation));
    }

    /// Drops connection `generation` (if still in use) and connects again in the background.
    fn replace(self: &Arc<Self>, generation: u64) {
        {
            let mut state = self.write();
            if !matches!(*state, State::Up(_) | State::Tripped(_)) || !self.current(generation) {
                return;
            }
            *state = State::Connecting;
        }
        // Relaxed: a hint for the backoff.
        self.strikes.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(reconnect(Arc::downgrade(self)));
    }
}
