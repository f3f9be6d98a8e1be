//! At most `--max-connections` gRPC connections open at once: a connection holds a permit
//! while it lives, and the listener accepts no more while none is left (the kernel's backlog
//! holds the rest).

use futures_util::Stream;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::transport::server::{Connected, TcpConnectInfo};

/// A connection and its permit.
pub(crate) struct Permitted {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
}

/// The connections of `listener`, at most `max` open at once.
pub(crate) fn bounded(
    listener: TcpListener,
    max: usize,
) -> impl Stream<Item = Result<Permitted, io::Error>> {
    let permits = Arc::new(Semaphore::new(max.max(1)));
    futures_util::stream::unfold((listener, permits), |(listener, permits)| async move {
        let permit = permits.clone().acquire_owned().await.ok()?;
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let item = Permitted {
                        stream,
                        _permit: permit,
                    };
                    return Some((Ok(item), (listener, permits)));
                }
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // the listener itself is fine.
                    tracing::warn!(error = %e, "accepting a gRPC connection failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    })
}

impl Connected for Permitted {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.stream.connect_info()
    }
}

impl AsyncRead for Permitted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Permitted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
