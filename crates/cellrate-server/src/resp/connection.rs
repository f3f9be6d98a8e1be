//! One RESP connection: read what the client sent, run every whole command in it in order,
//! write their replies at once (a pipeline of N commands costs one read and one write), and
//! wait for more.
//!
//! Bounds: a command is at most `--resp-max-command-bytes`, so the input buffered is at most
//! that and one read; the replies of one read are written before the next read, so a client
//! that does not take its replies stops being read (TCP's own backpressure) and is closed
//! after `--resp-timeout-ms`, as is one that leaves a command half sent that long. A
//! connection waiting for a client holds no buffer: thousands of idle connections cost their
//! sockets and little else. Input that is not RESP is answered with Redis's protocol error
//! and the connection closed, as Redis does.

use super::command;
use super::parse::Parser;
use super::reply::Out;
use super::{Context, Session};
use crate::throttle::counts::ThrottleCounts;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// The most bytes read at once.
const READ_CHUNK: usize = 16 * 1024;

/// The largest reply buffer kept between batches; a larger one (after a long pipeline) is
/// given back.
const KEPT_OUT: usize = 16 * 1024;

/// Serves `stream` until the client leaves, breaks a rule, or the server stops.
pub(crate) async fn serve(
    mut stream: TcpStream,
    ctx: Arc<Context>,
    mut stop: watch::Receiver<bool>,
) {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let mut session = Session::new(&ctx, peer);
    let mut buf: Vec<u8> = Vec::new();
    let mut parser = Parser::default();
    let mut out = Out::default();
    // Since when part of a command has been waiting for the rest.
    let mut partial_since: Option<Instant> = None;
    loop {
        let mut broken = None;
        loop {
            match parser.next(&buf, &ctx.limits) {
                Ok(Some(args)) => {
                    if args.len() > 0 {
                        command::run(&ctx, &mut session, args, &mut out).await;
                    }
                    if session.quit {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    broken = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = &broken {
            out.error(&e.to_string());
            ThrottleCounts::add(&ctx.server.globals().throttle.protocol_errors);
        }
        if !out.buf.is_empty() {
            if write(&mut stream, &out.buf, &ctx).await.is_err() {
                return;
            }
            out.buf.clear();
            if out.buf.capacity() > KEPT_OUT {
                out.buf = Vec::new();
            }
        }
        if broken.is_some() || session.quit {
            let _ = stream.shutdown().await;
            if broken.is_some() {
                linger(&mut stream).await;
            }
            return;
        }
        let consumed = parser.consumed();
        if consumed > 0 {
            buf.drain(..consumed);
            parser.dropped(consumed);
        }
        partial_since = if parser.in_command(&buf) {
            Some(partial_since.unwrap_or_else(Instant::now))
        } else {
            // Nothing pending: the buffer is given back while the client is quiet.
            buf = Vec::new();
            None
        };
        let deadline = match partial_since {
            Some(since) => Some(since + ctx.timeout),
            None => ctx.idle.map(|idle| Instant::now() + idle),
        };
        match read(&mut stream, &mut buf, deadline, &mut stop).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// After an error reply and the close of the write side, reads and drops what the client still
/// sends (until it closes, for at most a second and a megabyte): closing with its input unread
/// would reset the connection, and a reset can reach the client before it reads the reply.
async fn linger(stream: &mut TcpStream) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
    let mut sink = vec![0u8; READ_CHUNK];
    let mut left = LINGER_BYTES;
    while left > 0 {
        match tokio::time::timeout_at(deadline, stream.read(&mut sink)).await {
            Ok(Ok(n)) if n > 0 => left = left.saturating_sub(n),
            _ => return,
        }
    }
}

/// The most bytes [`linger`] drops.
const LINGER_BYTES: usize = 1 << 20;

/// Writes `bytes` whole within the timeout.
async fn write(stream: &mut TcpStream, bytes: &[u8], ctx: &Context) -> io::Result<()> {
    match tokio::time::timeout(ctx.timeout, stream.write_all(bytes)).await {
        Ok(written) => written,
        Err(_) => Err(io::ErrorKind::TimedOut.into()),
    }
}

/// Waits for input (until `deadline`, or the server stops), then reads what there is: the
/// bytes read, 0 at the end of the stream; an error when time is up or the server stops.
async fn read(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    deadline: Option<Instant>,
    stop: &mut watch::Receiver<bool>,
) -> io::Result<usize> {
    loop {
        let readable = async {
            match deadline {
                Some(at) => tokio::time::timeout_at(at.into(), stream.readable())
                    .await
                    .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into())),
                None => stream.readable().await,
            }
        };
        tokio::select! {
            ready = readable => ready?,
            _ = stop.wait_for(|stopping| *stopping) => {
                return Err(io::ErrorKind::Interrupted.into());
            }
        }
        buf.reserve(READ_CHUNK);
        match stream.try_read_buf(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}
