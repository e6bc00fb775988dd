//! The seed's internal `ContextAssembly.Assemble` over gRPC (tonic), with
//! the POST endpoint's semantics (see `proto/…/context_assembly.proto`).

use crate::service::{AssembleError, Service};
use std::sync::Arc;
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
    let message = e.to_string();
    let mut s = match e {
        AssembleError::Invalid(_) => Status::invalid_argument(message),
        AssembleError::Failed(_) => Status::failed_precondition(message),
        AssembleError::AttemptTaken(_) => Status::already_exists(message),
        AssembleError::Deadline(_) | AssembleError::Interrupted(_) => {
            Status::deadline_exceeded(message)
        }
        AssembleError::Wasm(_) => Status::internal(message),
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
        let tenant = request
            .metadata()
            .get("x-tenant-id")
            .ok_or_else(|| Status::invalid_argument("x-tenant-id: metadata entry missing"))?
            .to_str()
            .map_err(|_| Status::invalid_argument("x-tenant-id: not visible ASCII"))?
            .to_owned();
        let r = request.into_inner();
        let reply = self
            .service
            .assemble(&tenant, &r.run_id, &r.attempt_id, r.request_json.as_bytes())
            .await
            .map_err(|e| {
                tracing::warn!(target: "ctxpack::grpc", tenant, run_id = r.run_id, attempt_id = r.attempt_id, code = e.code(), error = %e, "not assembled");
                status(&e)
            })?;
        tracing::info!(target: "ctxpack::grpc", tenant, run_id = r.run_id, attempt_id = r.attempt_id, snapshot = %reply.context_snapshot_id, "assembled");
        Ok(Response::new(pb::AssembleReply {
            context_snapshot_id: reply.context_snapshot_id,
            status: reply.status.iter().map(crate::store::name).collect(),
            tokens_used: reply.tokens_used,
            token_budget: reply.token_budget,
            content_ref: reply.content_ref,
            replayed: reply.replayed,
        }))
    }
}
