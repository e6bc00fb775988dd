//! The seed's internal `ContextAssembly.Assemble` over gRPC (tonic), with
//! the POST endpoint's semantics (see `proto/…/context_assembly.proto`):
//! the same bearer token in the `authorization` metadata (scope
//! `factory.context.assemble`), the same rate limit
//! (`RESOURCE_EXHAUSTED` with `retry-after`), and the standard health
//! service (`grpc.health.v1.Health`) following `/readyz`.

use crate::auth::{Refusal, Scope};
use crate::listen::ListenError;
use crate::service::{AssembleError, Service};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tonic::codegen::http;
use tonic::{Request, Response, Status};

/// The generated messages and service.
pub mod pb {
    tonic::include_proto!("ctxpack.assembly.v1");
}

use pb::context_assembly_server::{ContextAssembly, ContextAssemblyServer};

/// The gRPC service over the shared [`Service`].
pub struct Grpc {
    service: Arc<Service>,
}

/// The tonic server for `service`, decoding messages of at most
/// `max_message` bytes.
pub fn server(service: Arc<Service>, max_message: usize) -> ContextAssemblyServer<Grpc> {
    ContextAssemblyServer::new(Grpc { service }).max_decoding_message_size(max_message)
}

fn status(e: &AssembleError) -> Status {
    let message = e.told();
    let mut s = match e {
        AssembleError::Invalid(_) => Status::invalid_argument(message),
        AssembleError::Forbidden(_) => Status::permission_denied(message),
        AssembleError::Failed(_) => Status::failed_precondition(message),
        AssembleError::AttemptTaken(_) => Status::already_exists(message),
        AssembleError::Deadline(_) | AssembleError::Interrupted(_) => {
            Status::deadline_exceeded(message)
        }
        AssembleError::Wasm(_) => Status::internal(message),
        AssembleError::Store(crate::snapshots::StoreError::Corrupt { .. }) => {
            Status::data_loss(message)
        }
        AssembleError::Store(_) => Status::unavailable(message),
    };
    if let AssembleError::Failed(reply) = e
        && let Ok(v) = reply.context_snapshot_id.parse()
    {
        s.metadata_mut().insert("x-context-snapshot-id", v);
    }
    s
}

#[tonic::async_trait]
impl ContextAssembly for Grpc {
    async fn assemble(
        &self,
        request: Request<pb::AssembleRequest>,
    ) -> Result<Response<pb::AssembleReply>, Status> {
        let ids = ids_of(request.metadata());
        let span = tracing::info_span!(
            "request",
            request_id = %ids.request_id,
            trace_id = %ids.trace_id,
            span_id = %ids.span_id,
        );
        let result = tracing::Instrument::instrument(self.assemble_as_caller(request), span).await;
        let code = match &result {
            Ok(_) => tonic::Code::Ok,
            Err(s) => s.code(),
        };
        self.service
            .metrics
            .response("grpc", "ContextAssembly/Assemble", &format!("{code:?}"));
        // A refusal carries the id too: the log has its detail under it.
        let id = ids.request_id.parse().ok();
        result
            .map(|mut r| {
                if let Some(v) = id.clone() {
                    r.metadata_mut().insert("x-request-id", v);
                }
                r
            })
            .map_err(|mut s| {
                if let Some(v) = id {
                    s.metadata_mut().insert("x-request-id", v);
                }
                s
            })
    }
}

/// The ids of a call, from its metadata as HTTP reads its headers.
fn ids_of(m: &tonic::metadata::MetadataMap) -> crate::trace::RequestIds {
    crate::trace::RequestIds::of(&m.clone().into_headers())
}

/// `s`, a refusal before the request is read, logged with its reason
/// (within [`crate::trace::REFUSAL_LINES`] a second).
fn logged(s: Status) -> Status {
    if let Some(suppressed) = crate::trace::refusal_line() {
        tracing::info!(target: "ctxpack::grpc", code = ?s.code(), reason = s.message(), suppressed, "refused");
    }
    s
}

fn refused(e: &Refusal) -> Status {
    match e {
        Refusal::Unauthenticated(m) => Status::unauthenticated(m.clone()),
        Refusal::Forbidden(m) => Status::permission_denied(m.clone()),
        Refusal::Invalid(m) => Status::invalid_argument(m.clone()),
    }
}

impl Grpc {
    async fn assemble_as_caller(
        &self,
        request: Request<pb::AssembleRequest>,
    ) -> Result<Response<pb::AssembleReply>, Status> {
        let all = |name: &str| {
            request
                .metadata()
                .get_all(name)
                .iter()
                .map(|v| v.as_bytes().to_vec())
                .collect::<Vec<_>>()
        };
        let (authorization, tenant_header) = (all("authorization"), all("x-tenant-id"));
        let caller = self
            .service
            .auth
            .caller(
                &authorization.iter().map(Vec::as_slice).collect::<Vec<_>>(),
                &tenant_header.iter().map(Vec::as_slice).collect::<Vec<_>>(),
            )
            .await
            .map_err(|e| logged(refused(&e)))?;
        caller
            .may(Scope::Assemble)
            .map_err(|e| logged(refused(&e)))?;
        if let Err(t) = self.service.admit(&caller.tenant).await {
            let mut s = Status::resource_exhausted(t.message);
            s.metadata_mut()
                .insert("retry-after", t.retry_after_s.into());
            return Err(logged(s));
        }
        let tenant = caller.tenant.clone();
        let r = request.into_inner();
        // Checked before they are logged.
        for (field, v) in [("runId", &r.run_id), ("attemptId", &r.attempt_id)] {
            if let Some(e) = crate::ids::id_error(field, v) {
                return Err(Status::invalid_argument(e));
            }
        }
        let reply = self
            .service
            .assemble(&caller, &r.run_id, &r.attempt_id, r.request_json.as_bytes())
            .await
            .map_err(|e| {
                if let Some(suppressed) = crate::trace::refusal_line() {
                    tracing::warn!(target: "ctxpack::grpc", tenant, run_id = r.run_id, attempt_id = r.attempt_id, code = e.code(), error = %e, suppressed, "not assembled");
                }
                status(&e)
            })?;
        tracing::info!(target: "ctxpack::grpc", tenant, run_id = r.run_id, attempt_id = r.attempt_id, snapshot = %reply.context_snapshot_id, "assembled");
        Ok(Response::new(pb::AssembleReply {
            context_snapshot_id: reply.context_snapshot_id,
            status: reply.status.iter().map(crate::snapshots::name).collect(),
            tokens_used: reply.tokens_used,
            token_budget: reply.token_budget,
            content_ref: reply.content_ref,
            replayed: reply.replayed,
            compaction_json: reply
                .compaction
                .as_ref()
                .map(crate::snapshots::json)
                .unwrap_or_default(),
            chat_json: reply
                .chat
                .as_ref()
                .map(crate::snapshots::json)
                .unwrap_or_default(),
        }))
    }
}

/// The standard health service, following the service's readiness: the
/// whole server (`""`) and `ContextAssembly` are SERVING while the store
/// takes writes (a broker that is away does not stop assemblies).
pub fn health(
    service: Arc<Service>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> tonic_health::pb::health_server::HealthServer<impl tonic_health::pb::health_server::Health> {
    let (reporter, server) = tonic_health::server::health_reporter();
    tokio::spawn(async move {
        loop {
            let status = if service.readiness().await.ok {
                tonic_health::ServingStatus::Serving
            } else {
                tonic_health::ServingStatus::NotServing
            };
            for name in ["", "ctxpack.assembly.v1.ContextAssembly"] {
                reporter.set_service_status(name, status).await;
            }
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_secs(2)) => {}
                _ = async { let _ = stop.wait_for(|s| *s).await; } => {
                    for name in ["", "ctxpack.assembly.v1.ContextAssembly"] {
                        reporter.set_service_status(name, tonic_health::ServingStatus::NotServing).await;
                    }
                    return;
                }
            }
        }
    });
    server
}

/// Answers a message that does not decode as `INVALID_ARGUMENT` (tonic
/// says `INTERNAL`): the client sent it, the server did not fail.
#[derive(Clone, Copy)]
pub struct StatusLayer;

impl<S> tower::Layer<S> for StatusLayer {
    type Service = tower::util::MapResponse<
        S,
        fn(http::Response<tonic::body::Body>) -> http::Response<tonic::body::Body>,
    >;

    fn layer(&self, inner: S) -> Self::Service {
        tower::util::MapResponse::new(inner, invalid_argument_for_decode_errors)
    }
}

fn invalid_argument_for_decode_errors(
    mut res: http::Response<tonic::body::Body>,
) -> http::Response<tonic::body::Body> {
    let h = res.headers_mut();
    let internal = h.get("grpc-status").is_some_and(|v| v.as_bytes() == b"13");
    let decode = h
        .get("grpc-message")
        .is_some_and(|v| v.as_bytes().starts_with(b"failed%20to%20decode"));
    if internal && decode {
        h.insert("grpc-status", http::HeaderValue::from_static("3"));
    }
    res
}

/// What the gRPC listener serves, and how.
pub(crate) struct Serving {
    pub service: Arc<Service>,
    pub max_body: usize,
    /// An assembly's deadline (a call's timeout adds the body's).
    pub deadline: Duration,
    pub limits: crate::listen::Limits,
    pub tls: Option<crate::listen::ServerTls>,
}

impl Serving {
    /// Serves the context-assembly service and gRPC health on `addr` until
    /// `stop`; calls still open when the shutdown deadline passes are cut.
    /// Its address, and the task serving it.
    pub(crate) async fn listen(
        self,
        addr: SocketAddr,
        stop: &watch::Sender<bool>,
    ) -> Result<(SocketAddr, tokio::task::JoinHandle<Result<(), ListenError>>), ListenError> {
        let (listener, bound) = crate::listen::bind("--grpc", addr).await?;
        let conns = crate::listen::conns::Conns::new(
            self.limits.max_connections,
            self.limits.max_connections_per_client,
        );
        let incoming = crate::listen::incoming(
            listener,
            self.limits.clone(),
            conns.clone(),
            stop.subscribe(),
        );
        let svc = server(self.service.clone(), self.max_body);
        let health = health(self.service.clone(), stop.subscribe());
        let mut until = stop.subscribe();
        let shutdown = async move {
            let _ = until.wait_for(|s| *s).await;
        };
        let mut builder = tonic::transport::Server::builder()
            .timeout(self.deadline + self.limits.body_timeout)
            .http2_keepalive_interval(Some(Duration::from_secs(30)))
            .http2_keepalive_timeout(Some(Duration::from_secs(10)))
            .concurrency_limit_per_connection(256);
        if let Some(t) = &self.tls {
            builder = builder
                .tls_config(
                    tonic::transport::ServerTlsConfig::new()
                        .identity(tonic::transport::Identity::from_pem(&t.cert, &t.key)),
                )
                .map_err(ListenError::GrpcTls)?;
        }
        let mut cut = stop.subscribe();
        let deadline = self.limits.shutdown;
        let task = tokio::spawn(async move {
            let serve = builder
                .layer(StatusLayer)
                .layer(crate::listen::conns::BusyLayer(conns))
                .add_service(health)
                .add_service(svc)
                .serve_with_incoming_shutdown(incoming, shutdown);
            tokio::select! {
                r = serve => r.map_err(ListenError::Grpc),
                _ = async {
                    let _ = cut.wait_for(|s| *s).await;
                    tokio::time::sleep(deadline).await;
                } => {
                    tracing::warn!(target: "ctxpack::serve", after = ?deadline, "shutdown deadline passed: gRPC calls still open are cut");
                    Ok(())
                }
            }
        });
        Ok((bound, task))
    }
}
