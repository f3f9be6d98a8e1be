//! The gRPC port's transport: TLS from PEM files (rustls), and the bound on open connections.

use crate::decisions::SHOP;
use crate::support::{descriptor, request, Running, TempDir};
use cellrate::ManualClock;
use cellrate_server::{Config, Server, Settings};
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_client::RateLimitServiceClient;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::{Certificate, Channel, ClientTlsConfig};

/// A CA (`ca.pem`) and a certificate for `localhost` it signed (`cert.pem`, `key.pem`) in `dir`.
fn certificates(dir: &Path) -> bool {
    let ext = dir.join("ext.cnf");
    std::fs::write(
        &ext,
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    let steps: [&[&str]; 3] = [
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=test-ca",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ],
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "key.pem",
            "-out",
            "req.csr",
        ],
        &[
            "x509",
            "-req",
            "-in",
            "req.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-out",
            "cert.pem",
            "-extfile",
            "ext.cnf",
        ],
    ];
    steps.iter().all(|args| {
        Command::new("openssl")
            .args(*args)
            .current_dir(dir)
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[tokio::test]
async fn tls_from_pem_files() {
    let dir = TempDir::new("tls");
    if !certificates(&dir.0) {
        eprintln!("skipped: openssl could not make the certificates");
        return;
    }
    dir.write("shop.yaml", SHOP);
    let mut settings = Settings::for_dir(&dir.0);
    settings.tls_cert = Some(dir.0.join("cert.pem"));
    settings.tls_key = Some(dir.0.join("key.pem"));
    let config = Config::load_dir(&dir.0).unwrap();
    let server = Server::with_clock(settings, config, Arc::new(ManualClock::new()))
        .await
        .unwrap();
    let grpc = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = grpc.local_addr().unwrap().port();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.serve_on(grpc, http, async move {
        let _ = rx.await;
    }));
    let ca = Certificate::from_pem(std::fs::read(dir.0.join("ca.pem")).unwrap());
    let channel = Channel::from_shared(format!("https://localhost:{port}"))
        .unwrap()
        .tls_config(
            ClientTlsConfig::new()
                .ca_certificate(ca)
                .domain_name("localhost"),
        )
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = RateLimitServiceClient::new(channel);
    let answer = client
        .should_rate_limit(request("shop", vec![descriptor(&[("user", "u")])], 0))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (answer.overall_code, answer.statuses[0].limit_remaining),
        (1, 3)
    );
    // Plain text is not served on a TLS port.
    let plain = Channel::from_shared(format!("http://127.0.0.1:{port}"))
        .unwrap()
        .connect()
        .await;
    if let Ok(channel) = plain {
        let mut client = RateLimitServiceClient::new(channel);
        let call = client.should_rate_limit(request("shop", vec![descriptor(&[("user", "u")])], 0));
        let answer = tokio::time::timeout(Duration::from_secs(5), call).await;
        assert!(!matches!(answer, Ok(Ok(_))), "answered in plain text");
    }
    let _ = tx.send(());
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn connections_beyond_the_bound_wait_for_a_free_one() {
    let mut first = Running::start(&[("shop.yaml", SHOP)], |s| s.max_connections = 1).await;
    let call = || request("shop", vec![descriptor(&[("user", "u")])], 0);
    first.call(call()).await.unwrap();
    let second = Channel::from_shared(format!("http://127.0.0.1:{}", first.grpc_port))
        .unwrap()
        .connect_lazy();
    let mut second = RateLimitServiceClient::new(second);
    let waiting =
        tokio::time::timeout(Duration::from_millis(300), second.should_rate_limit(call())).await;
    assert!(
        waiting.is_err(),
        "a second connection was served beside the first"
    );
    // The first connection closes: its permit goes to the second.
    let Running { client, .. } = &mut first;
    *client =
        RateLimitServiceClient::new(Channel::from_static("http://127.0.0.1:9").connect_lazy());
    let served =
        tokio::time::timeout(Duration::from_secs(10), second.should_rate_limit(call())).await;
    assert!(matches!(served, Ok(Ok(_))), "{served:?}");
    drop(second);
    first.stop().await;
}
