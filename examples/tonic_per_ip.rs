//! A tonic gRPC server limited per client IP, and a tonic client that calls it until it is
//! denied. tonic-health brings the generated code, so no protoc is needed:
//!
//! ```sh
//! cargo run --example tonic_per_ip --features tonic
//! ```

use cellrate::{KeyedLimiter, Quota};
use cellrate_http::{ClientIp, Keyed, RateLimitLayer};
use std::net::IpAddr;
use std::sync::Arc;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Server};
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Per client: a burst of 3, then 1 call per second.
    let per_ip = KeyedLimiter::<IpAddr>::new(Quota::per_second(1).with_burst(3));
    // ClientIp reads the peer address tonic records (TcpConnectInfo, the `tonic` feature).
    // tonic's body cannot be built from bytes, so the layer wraps it to answer in it.
    let limit = RateLimitLayer::builder(Keyed::new("per-ip", Arc::new(per_ip), ClientIp::new()))
        .wrap_body()
        .build();

    let (_reporter, health) = tonic_health::server::health_reporter();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(
        Server::builder()
            .layer(limit)
            .add_service(health)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    println!("serving gRPC on {addr}");

    let channel = Channel::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    let mut client = HealthClient::new(channel);
    for call in 1.. {
        let request = HealthCheckRequest {
            service: String::new(),
        };
        match client.check(request).await {
            Ok(answer) => {
                let left = answer.metadata().get("ratelimit");
                println!("call {call}: admitted, ratelimit: {left:?}");
            }
            Err(status) => {
                // RESOURCE_EXHAUSTED, with the time to wait in grpc-retry-pushback-ms.
                let pushback = status.metadata().get("grpc-retry-pushback-ms");
                println!("call {call}: {:?}: {}", status.code(), status.message());
                println!("grpc-retry-pushback-ms: {pushback:?}");
                return Ok(());
            }
        }
    }
    Ok(())
}
