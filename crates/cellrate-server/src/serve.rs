//! The listeners: gRPC (RLS v3 and grpc.health.v1, TLS if configured, bounded connections and
//! streams) and HTTP (metrics and probes), the config watcher, and the graceful shutdown.

use crate::connections::bounded;
use crate::server::Server;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::RateLimitServiceServer;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::transport::{Certificate, Identity, ServerTlsConfig};

impl Server {
    /// Serves on the settings' ports until `shutdown` completes (then stops accepting, reports
    /// not ready and NOT_SERVING, and waits up to `--shutdown-grace-secs` for calls in flight),
    /// watching the config directory for changes.
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        let s = self.settings();
        let grpc = TcpListener::bind(SocketAddr::new(s.host, s.grpc_port)).await?;
        let http = TcpListener::bind(SocketAddr::new(s.host, s.http_port)).await?;
        self.serve_on(grpc, http, shutdown).await
    }

    /// [`serve`](Self::serve) on listeners already bound (port 0 in tests).
    pub async fn serve_on(
        self,
        grpc: TcpListener,
        http: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        // Boxed: the server's future nests deeper than the compiler's default recursion limit
        // allows a caller's own future to hold.
        Box::pin(self.run(grpc, http, Box::pin(shutdown))).await
    }

    async fn run(
        self,
        grpc: TcpListener,
        http: TcpListener,
        shutdown: std::pin::Pin<Box<dyn Future<Output = ()> + Send>>,
    ) -> io::Result<()> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let watcher = crate::reload::watch(self.clone(), stop_rx.clone());
        let (health, health_service) = tonic_health::server::health_reporter();
        health
            .set_serving::<RateLimitServiceServer<crate::Rls>>()
            .await;
        tracing::info!(
            grpc = %grpc.local_addr()?,
            http = %http.local_addr()?,
            rules = self.active().config.rules().len(),
            "serving"
        );
        let router = crate::http::router(self.clone(), stop_rx.clone());
        let http_stop = stopped(stop_rx.clone());
        let http_task = tokio::spawn(async move {
            axum::serve(http, router)
                .with_graceful_shutdown(http_stop)
                .await
        });
        let grpc_task = tokio::spawn(self.clone().grpc(
            grpc,
            health_service,
            stopped(stop_rx.clone()),
        ));
        shutdown.await;
        tracing::info!("shutting down: no new connections, waiting for calls in flight");
        health
            .set_not_serving::<RateLimitServiceServer<crate::Rls>>()
            .await;
        let _ = stop_tx.send(true);
        let grace = self.settings().shutdown_grace();
        let both = async {
            let (g, h) = tokio::join!(grpc_task, http_task);
            (g, h)
        };
        match tokio::time::timeout(grace, both).await {
            Ok((grpc, http)) => {
                flatten(grpc)?;
                flatten(http.map(|r| r.map_err(io::Error::other)))?;
            }
            Err(_) => tracing::warn!(?grace, "calls still in flight after the grace period"),
        }
        drop(watcher);
        tracing::info!("stopped");
        Ok(())
    }

    async fn grpc(
        self,
        listener: TcpListener,
        health: tonic_health::pb::health_server::HealthServer<
            impl tonic_health::pb::health_server::Health,
        >,
        stop: impl Future<Output = ()>,
    ) -> io::Result<()> {
        let s = self.settings().clone();
        let mut builder = tonic::transport::Server::builder()
            .max_concurrent_streams(s.max_concurrent_streams)
            .http2_keepalive_interval(Some(Duration::from_secs(30)))
            .tcp_nodelay(true);
        if let (Some(cert), Some(key)) = (&s.tls_cert, &s.tls_key) {
            let identity = Identity::from_pem(std::fs::read(cert)?, std::fs::read(key)?);
            let mut tls = ServerTlsConfig::new().identity(identity);
            if let Some(ca) = &s.tls_client_ca {
                tls = tls.client_ca_root(Certificate::from_pem(std::fs::read(ca)?));
            }
            builder = builder.tls_config(tls).map_err(io::Error::other)?;
        }
        builder
            .add_service(health)
            .add_service(self.rls_service())
            .serve_with_incoming_shutdown(bounded(listener, s.max_connections), stop)
            .await
            .map_err(io::Error::other)
    }
}

/// Completes when `stop` turns true.
async fn stopped(mut stop: watch::Receiver<bool>) {
    while !*stop.borrow_and_update() {
        if stop.changed().await.is_err() {
            return;
        }
    }
}

fn flatten(joined: Result<io::Result<()>, tokio::task::JoinError>) -> io::Result<()> {
    joined.map_err(io::Error::other)?
}

/// A future that completes on SIGTERM or SIGINT (Ctrl-C).
pub async fn termination() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
