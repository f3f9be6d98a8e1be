//! `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` on tonic.

pub(crate) mod request;
pub(crate) mod response;

use crate::decide::{self, Descriptor};
use crate::metrics::Call;
use crate::server::Server;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_service_server::{
    RateLimitService, RateLimitServiceServer,
};
use envoy_types::pb::envoy::service::ratelimit::v3::{RateLimitRequest, RateLimitResponse};
use std::time::Instant;
use tonic::{Request, Response, Status};

/// The RLS v3 service of a [`Server`], to mount in a tonic router (`Server::rls_service`).
#[derive(Clone)]
pub struct Rls {
    server: Server,
}

impl Server {
    /// The RLS v3 gRPC service, to mount in a tonic router of your own, with the server's
    /// message size limit.
    pub fn rls_service(&self) -> RateLimitServiceServer<Rls> {
        let max = self.settings().max_message_bytes;
        RateLimitServiceServer::new(Rls {
            server: self.clone(),
        })
        .max_decoding_message_size(max)
        .max_encoding_message_size(max)
    }
}

#[tonic::async_trait]
impl RateLimitService for Rls {
    async fn should_rate_limit(
        &self,
        request: Request<RateLimitRequest>,
    ) -> Result<Response<RateLimitResponse>, Status> {
        self.server
            .should_rate_limit(request.into_inner())
            .await
            .map(Response::new)
    }
}

impl Server {
    /// Decides one RLS request, counted with its latency: what `ShouldRateLimit` and
    /// `POST /json` answer.
    pub(crate) async fn should_rate_limit(
        &self,
        request: RateLimitRequest,
    ) -> Result<RateLimitResponse, Status> {
        let started = Instant::now();
        let answer = self.answer(request).await;
        let call = match &answer {
            Ok(response) if response.overall_code == 2 => Call::OverLimit,
            Ok(_) => Call::Ok,
            Err(_) => Call::Invalid,
        };
        self.globals().call(call, started.elapsed());
        answer
    }

    async fn answer(&self, mut request: RateLimitRequest) -> Result<RateLimitResponse, Status> {
        let server = self;
        let checked = request::check(&mut request, request::Bounds::of(server.settings()))
            .map_err(|reason| {
                tracing::debug!(domain = %request.domain, %reason, "invalid request");
                Status::invalid_argument(reason)
            })?;
        let descriptors: Vec<Descriptor<'_>> = checked
            .iter()
            .map(|c| Descriptor {
                entries: &c.entries,
                limit: c.limit,
                cost: c.cost,
            })
            .collect();
        let active = server.active();
        let (admitted, statuses) =
            decide::decide(&active, server.store(), &request.domain, &descriptors)
                .await
                .map_err(|refusal| Status::invalid_argument(refusal.0))?;
        Ok(response::response(
            admitted,
            &statuses,
            server.settings().response_headers,
        ))
    }
}
