//! A store's side of the connectors: `stores.proto` served over gRPC and
//! the HTTP JSON shape, both answering through one function. The tests'
//! upstreams and `ctxpack-fixture-store` (the load script's stores) are
//! made of it; a store written in Rust could be too.
//!
//! The typed messages tonic generates are read and written through the
//! core's JSON ([`crate::protojson`]), as the service's connector does, so
//! nothing here restates a type of the WIT.

use crate::protojson;
use crate::snapshots::BoxFuture;
use crate::upstream::{UpstreamError, method_of};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use ctxpack_core::Capability;
use ctxpack_core::{AgentContext, Answer, Call};
use prost::Message;
use prost_reflect::DynamicMessage;
use serde_json::{Value, json};
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// The messages and services of `stores.proto`, as tonic generates them.
pub mod pb {
    tonic::include_proto!("ctxpack.stores.v1");
}

/// What the store answers a call with, given the request's context and
/// the `authorization` it was sent with. A failed answer is a gRPC
/// `UNAVAILABLE` status, or HTTP's `{"err": …}`.
pub type Answering = Arc<
    dyn Fn(Call<'static>, AgentContext, Option<String>) -> BoxFuture<'static, Answer> + Send + Sync,
>;

/// The gRPC side.
#[derive(Clone)]
pub struct Grpc(pub Answering);

fn invalid(e: impl std::fmt::Display) -> Status {
    Status::invalid_argument(e.to_string())
}

/// The call and context a typed request of `capability` carries.
pub fn call_of<Req: Message>(
    capability: &str,
    request: &Req,
) -> Result<(Call<'static>, AgentContext), UpstreamError> {
    let method = method_of(capability)?;
    let dynamic = DynamicMessage::decode(method.input(), request.encode_to_vec().as_slice())?;
    let mut args = protojson::from_message(&dynamic, "request")?;
    let context = match args.as_object_mut().and_then(|o| o.remove("context")) {
        Some(c) => serde_json::from_value(c).map_err(UpstreamError::Context)?,
        None => AgentContext::default(),
    };
    let function = capability.split_once('.').map_or(capability, |(_, f)| f);
    let call = serde_json::from_value(json!({ function: args }))?;
    Ok((call, context))
}

/// The typed reply of `capability` holding `answer`'s success, or the
/// status of its failure.
pub fn reply_of<Rep: Message + Default>(capability: &str, answer: &Answer) -> Result<Rep, Status> {
    let json = serde_json::to_value(answer).map_err(|e| Status::internal(e.to_string()))?;
    if let Some(err) = json.get("err") {
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("failed");
        return Err(Status::unavailable(message));
    }
    let method = method_of(capability).map_err(|e| Status::internal(e.to_string()))?;
    let ok = json.get("ok").cloned().unwrap_or(Value::Null);
    let dynamic = protojson::to_message(&json!({ "answer": ok }), &method.output(), "reply")
        .map_err(|e| Status::internal(e.to_string()))?;
    Rep::decode(dynamic.encode_to_vec().as_slice()).map_err(|e| Status::internal(e.to_string()))
}

impl Grpc {
    async fn serve<Req: Message, Rep: Message + Default>(
        &self,
        capability: &str,
        request: Request<Req>,
    ) -> Result<Response<Rep>, Status> {
        let auth = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let (call, context) = call_of(capability, request.get_ref()).map_err(invalid)?;
        let answer = (self.0)(call, context, auth).await;
        reply_of(capability, &answer).map(Response::new)
    }

    /// The three services, ready to add to a tonic server.
    pub fn services(
        self,
    ) -> (
        pb::sources_server::SourcesServer<Grpc>,
        pb::policy_server::PolicyServer<Grpc>,
        pb::summarizer_server::SummarizerServer<Grpc>,
    ) {
        (
            pb::sources_server::SourcesServer::new(self.clone()),
            pb::policy_server::PolicyServer::new(self.clone()),
            pb::summarizer_server::SummarizerServer::new(self),
        )
    }
}

#[tonic::async_trait]
impl pb::sources_server::Sources for Grpc {
    async fn retrieve(
        &self,
        r: Request<pb::RetrieveRequest>,
    ) -> Result<Response<pb::RetrieveReply>, Status> {
        self.serve(Capability::Retrieve.name(), r).await
    }
    async fn expand_graph(
        &self,
        r: Request<pb::ExpandGraphRequest>,
    ) -> Result<Response<pb::ExpandGraphReply>, Status> {
        self.serve(Capability::ExpandGraph.name(), r).await
    }
    async fn recall_memory(
        &self,
        r: Request<pb::RecallMemoryRequest>,
    ) -> Result<Response<pb::RecallMemoryReply>, Status> {
        self.serve(Capability::RecallMemory.name(), r).await
    }
    async fn repository_state(
        &self,
        r: Request<pb::RepositoryStateRequest>,
    ) -> Result<Response<pb::RepositoryStateReply>, Status> {
        self.serve(Capability::RepositoryState.name(), r).await
    }
}

#[tonic::async_trait]
impl pb::policy_server::Policy for Grpc {
    async fn review(
        &self,
        r: Request<pb::ReviewRequest>,
    ) -> Result<Response<pb::ReviewReply>, Status> {
        self.serve(Capability::Review.name(), r).await
    }
}

#[tonic::async_trait]
impl pb::summarizer_server::Summarizer for Grpc {
    async fn summarize(
        &self,
        r: Request<pb::SummarizeRequest>,
    ) -> Result<Response<pb::SummarizeReply>, Status> {
        self.serve(Capability::Summarize.name(), r).await
    }
}

/// The HTTP side: `POST` with `{"context": …, "call": …}` at any path,
/// answered with `{"ok": …}` or `{"err": …}`.
pub fn http(answering: Answering) -> axum::Router {
    axum::Router::new()
        .fallback(axum::routing::post(http_call))
        .with_state(answering)
}

async fn http_call(
    State(answering): State<Answering>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> (StatusCode, String) {
    #[derive(serde::Deserialize)]
    struct Body {
        #[serde(default)]
        context: AgentContext,
        call: Call<'static>,
    }
    let read: Body = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()),
    };
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let answer = answering(read.call, read.context, auth).await;
    match serde_json::to_string(&answer) {
        Ok(text) => (StatusCode::OK, text),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}
