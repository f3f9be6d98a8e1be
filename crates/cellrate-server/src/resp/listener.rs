//! The RESP listener: each connection served by a task of its own, at most
//! `--resp-max-connections` at once. One more is accepted, told `ERR max number of clients
//! reached` and closed, as Redis does, so that a client learns why instead of waiting in the
//! kernel's backlog.

use super::{connection, Context};
use crate::server::Server;
use crate::throttle::counts::ThrottleCounts;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

/// Serves RESP on `listener` until `stop` turns true.
pub(crate) async fn serve(
    server: Server,
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
) -> io::Result<()> {
    let port = listener.local_addr()?.port();
    let max = server.settings().resp_max_connections.max(1);
    let ctx = Arc::new(Context::new(server, port));
    let permits = Arc::new(Semaphore::new(max));
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|stopping| *stopping) => return Ok(()),
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, or a connection reset before it was accepted: the
                // listener itself is fine.
                tracing::warn!(error = %e, "accepting a RESP connection failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let counts = &ctx.server.globals().throttle;
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            ThrottleCounts::add(&counts.refused);
            // A fresh socket's send buffer takes this at once; if not, the close says enough.
            let _ = stream.try_write(b"-ERR max number of clients reached\r\n");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (ctx, stop) = (ctx.clone(), stop.clone());
        tokio::spawn(async move {
            let counts = &ctx.server.globals().throttle;
            // Relaxed: a gauge read alone by a scrape.
            counts.connections.fetch_add(1, Ordering::Relaxed);
            connection::serve(stream, ctx.clone(), stop).await;
            counts.connections.fetch_sub(1, Ordering::Relaxed);
            drop(permit);
        });
    }
}
