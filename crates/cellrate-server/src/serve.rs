//! The listeners: gRPC (RLS v3 and grpc.health.v1, TLS if configured, bounded connections and
//! streams), HTTP (metrics, probes, and the JSON endpoints unless they have a port of their
//! own), RESP if configured, the config watcher, and the graceful shutdown.

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

/// The listeners a server serves on, bound by the caller (port 0 in tests).
#[derive(Debug)]
#[non_exhaustive]
pub struct Listeners {
    /// RLS v3 and grpc.health.v1.
    pub grpc: TcpListener,
    /// Metrics and probes, and `POST /json` and `POST /throttle` if `json` is `None`.
    pub http: TcpListener,
    /// RESP (`CL.THROTTLE`), if served.
    pub resp: Option<TcpListener>,
    /// `POST /json` and `POST /throttle` on a port of their own.
    pub json: Option<TcpListener>,
}

impl Listeners {
    /// The gRPC and HTTP listeners, no RESP, the JSON endpoints on the HTTP port.
    pub fn new(grpc: TcpListener, http: TcpListener) -> Listeners {
        Listeners {
            grpc,
            http,
            resp: None,
            json: None,
        }
    }

    /// With RESP served on `resp`.
    pub fn resp(mut self, resp: TcpListener) -> Listeners {
        self.resp = Some(resp);
        self
    }

    /// With the JSON endpoints on `json` instead of the HTTP port.
    pub fn json(mut self, json: TcpListener) -> Listeners {
        self.json = Some(json);
        self
    }
}

impl Server {
    /// Serves on the settings' ports until `shutdown` completes (then stops accepting, reports
    /// not ready and NOT_SERVING, and waits up to `--shutdown-grace-secs` for calls in flight),
    /// watching the config directory for changes.
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        let s = self.settings();
        let bind = |port| TcpListener::bind(SocketAddr::new(s.host, port));
        let mut listeners = Listeners::new(bind(s.grpc_port).await?, bind(s.http_port).await?);
        if let Some(port) = s.resp_port {
            listeners = listeners.resp(bind(port).await?);
        }
        if let Some(port) = s.json_port {
            listeners = listeners.json(bind(port).await?);
        }
        self.serve_with(listeners, shutdown).await
    }

    /// [`serve`](Self::serve) on a gRPC and an HTTP listener already bound (port 0 in tests).
    pub async fn serve_on(
        self,
        grpc: TcpListener,
        http: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        self.serve_with(Listeners::new(grpc, http), shutdown).await
    }

    /// [`serve`](Self::serve) on listeners already bound.
    pub async fn serve_with(
        self,
        listeners: Listeners,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        // Boxed: the server's future nests deeper than the compiler's default recursion limit
        // allows a caller's own future to hold.
        Box::pin(self.run(listeners, Box::pin(shutdown))).await
    }

    async fn run(
        self,
        listeners: Listeners,
        shutdown: std::pin::Pin<Box<dyn Future<Output = ()> + Send>>,
    ) -> io::Result<()> {
        let Listeners {
            grpc,
            http,
            resp,
            json,
        } = listeners;
        let (stop_tx, stop_rx) = watch::channel(false);
        let watcher = self
            .watches_config()
            .then(|| crate::reload::watch(self.clone(), stop_rx.clone()))
            .flatten();
        let (health, health_service) = tonic_health::server::health_reporter();
        health
            .set_serving::<RateLimitServiceServer<crate::Rls>>()
            .await;
        let port = |l: &Option<TcpListener>| {
            l.as_ref()
                .and_then(|l| l.local_addr().ok())
                .map(|a| a.to_string())
                .unwrap_or_else(|| "off".to_owned())
        };
        tracing::info!(
            grpc = %grpc.local_addr()?,
            http = %http.local_addr()?,
            resp = %port(&resp),
            json = %port(&json),
            rules = self.active().config.rules().len(),
            "serving"
        );
        let router = crate::http::router(self.clone(), stop_rx.clone(), json.is_none());
        let mut http_tasks = vec![self.http(http, router, &stop_rx)];
        if let Some(json) = json {
            http_tasks.push(self.http(json, crate::http::json_router(self.clone()), &stop_rx));
        }
        let resp_task =
            resp.map(|resp| tokio::spawn(crate::resp::serve(self.clone(), resp, stop_rx.clone())));
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
        let all = async {
            let mut results = vec![grpc_task.await];
            for task in http_tasks {
                results.push(task.await);
            }
            if let Some(task) = resp_task {
                results.push(task.await);
            }
            results
        };
        match tokio::time::timeout(grace, all).await {
            Ok(results) => {
                for result in results {
                    flatten(result)?;
                }
            }
            Err(_) => tracing::warn!(?grace, "calls still in flight after the grace period"),
        }
        drop(watcher);
        tracing::info!("stopped");
        Ok(())
    }

    /// Serves `router` on `listener` until the server stops.
    fn http(
        &self,
        listener: TcpListener,
        router: axum::Router,
        stop: &watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<io::Result<()>> {
        let stop = stopped(stop.clone());
        tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(stop)
                .await
        })
    }

    /// Whether the config directory is watched: unless no `--config` was given and the
    /// reference server's runtime directory does not exist (a server for RESP alone).
    fn watches_config(&self) -> bool {
        let s = self.settings();
        s.config.is_some() || s.config_dir().is_dir()
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
