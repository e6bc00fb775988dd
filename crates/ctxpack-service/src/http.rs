//! The HTTP API (the seed's, under `/factory`), plus `/metrics` and
//! `/healthz`. Every `/factory` request names its tenant in the
//! `x-tenant-id` header; a tenant reads only its own snapshots (another
//! tenant's id answers 404, as an id that does not exist).
//!
//! Answers are JSON with camelCase keys; errors are
//! `{"error": {"code": …, "message": …}}`, the message naming the field at
//! fault.

use crate::service::{AssembleError, Service, check_id};
use crate::store::{Detail, json, now_rfc3339};
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

/// The routes, with `max_body` bytes as the most a request body may hold.
pub fn router(service: Arc<Service>, max_body: usize) -> Router {
    Router::new()
        .route(
            "/factory/runs/{run_id}/attempts/{attempt_id}/context",
            post(assemble),
        )
        .route("/factory/runs/{run_id}/context-snapshots", get(list))
        .route("/factory/context-snapshots/{id}", get(detail))
        .route("/factory/context-snapshots/{id}/content", get(content))
        .route("/factory/sources/{id}/deleted", post(source_deleted))
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(service)
}

fn error(status: StatusCode, code: &str, message: impl std::fmt::Display) -> Response {
    (
        status,
        axum::Json(json!({"error": {"code": code, "message": message.to_string()}})),
    )
        .into_response()
}

/// The tenant a request names in `x-tenant-id`; a request without a
/// valid one is refused before its handler runs.
struct Tenant(String);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Tenant {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Response> {
        tenant(&parts.headers).map(Tenant).map_err(|e| reject(&e))
    }
}

fn tenant(headers: &HeaderMap) -> Result<String, AssembleError> {
    let t = headers
        .get("x-tenant-id")
        .ok_or_else(|| {
            AssembleError::Invalid(
                "x-tenant-id: header missing; every request names its tenant".into(),
            )
        })?
        .to_str()
        .map_err(|_| AssembleError::Invalid("x-tenant-id: not visible ASCII".into()))?
        .to_owned();
    check_id("x-tenant-id", &t)?;
    Ok(t)
}

fn reject(e: &AssembleError) -> Response {
    let status = match e {
        AssembleError::Invalid(_) => StatusCode::BAD_REQUEST,
        AssembleError::Failed(_) => StatusCode::UNPROCESSABLE_ENTITY,
        AssembleError::AttemptTaken(_) => StatusCode::CONFLICT,
        AssembleError::Deadline(_) | AssembleError::Interrupted(_) => StatusCode::GATEWAY_TIMEOUT,
        AssembleError::Wasm(_) => StatusCode::INTERNAL_SERVER_ERROR,
        AssembleError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
    };
    error(status, e.code(), e)
}

async fn assemble(
    State(service): State<Arc<Service>>,
    Path((run_id, attempt_id)): Path<(String, String)>,
    Tenant(tenant): Tenant,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let started = Instant::now();
    let body = match body {
        Ok(b) => b,
        Err(e) => {
            return error(
                e.status(),
                "invalid-request",
                format!("request body: {}", e.body_text()),
            );
        }
    };
    let result = service.assemble(&tenant, &run_id, &attempt_id, &body).await;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    match result {
        Ok(reply) => {
            tracing::info!(
                target: "ctxpack::assemble",
                tenant, run_id, attempt_id,
                snapshot = %reply.context_snapshot_id,
                status = %json(&reply.status),
                tokens_used = reply.tokens_used,
                replayed = reply.replayed,
                ms,
                "assembled"
            );
            let code = if reply.replayed {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            let location = format!("/factory/context-snapshots/{}", reply.context_snapshot_id);
            (code, [(header::LOCATION, location)], axum::Json(reply)).into_response()
        }
        Err(AssembleError::Failed(reply)) => {
            tracing::info!(
                target: "ctxpack::assemble",
                tenant, run_id, attempt_id,
                snapshot = %reply.context_snapshot_id,
                failure = reply.failure.as_deref().unwrap_or(""),
                ms,
                "assembly failed; its snapshot is recorded"
            );
            let mut body = serde_json::to_value(&*reply).unwrap_or(Value::Null);
            body["error"] = json!({
                "code": "assembly-failed",
                "message": reply.failure.clone().unwrap_or_default(),
            });
            (StatusCode::UNPROCESSABLE_ENTITY, axum::Json(body)).into_response()
        }
        Err(e) => {
            tracing::warn!(
                target: "ctxpack::assemble",
                tenant, run_id, attempt_id, code = e.code(), error = %e, ms,
                "not assembled"
            );
            reject(&e)
        }
    }
}

async fn list(
    State(service): State<Arc<Service>>,
    Path(run_id): Path<String>,
    Tenant(tenant): Tenant,
) -> Response {
    match service.store.list(&tenant, &run_id).await {
        Ok(snapshots) => {
            axum::Json(json!({"runId": run_id, "snapshots": snapshots})).into_response()
        }
        Err(e) => reject(&e.into()),
    }
}

async fn detail(
    State(service): State<Arc<Service>>,
    Path(id): Path<String>,
    Tenant(tenant): Tenant,
) -> Response {
    match service.store.get(&tenant, &id).await {
        Ok(Some(d)) => axum::Json(detail_json(&d)).into_response(),
        Ok(None) => not_found(&id),
        Err(e) => reject(&e.into()),
    }
}

fn not_found(id: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "not-found",
        format!("contextSnapshotId: no snapshot {id:?} for this tenant"),
    )
}

async fn content(
    State(service): State<Arc<Service>>,
    Path(id): Path<String>,
    Tenant(tenant): Tenant,
) -> Response {
    match service.store.content_of(&tenant, &id).await {
        Ok(Some(text)) => {
            ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
        }
        Ok(None) => not_found(&id),
        Err(e) => reject(&e.into()),
    }
}

async fn source_deleted(
    State(service): State<Arc<Service>>,
    Path(source_id): Path<String>,
    Tenant(tenant): Tenant,
) -> Response {
    if let Err(e) = check_id("sourceId", &source_id) {
        return reject(&e);
    }
    match service
        .store
        .source_deleted(&tenant, &source_id, &now_rfc3339())
        .await
    {
        Ok(marked) => {
            tracing::info!(target: "ctxpack::lineage", tenant, source_id, marked, "source deleted");
            axum::Json(json!({"sourceId": source_id, "snapshotsMarked": marked})).into_response()
        }
        Err(e) => reject(&e.into()),
    }
}

async fn metrics(State(service): State<Arc<Service>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        service.metrics.render(),
    )
        .into_response()
}

/// `kebab-case` -> `camelCase`.
fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut up = false;
    for c in key.chars() {
        if c == '-' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Every object key of `v` in camelCase; values as they are.
pub(crate) fn camel_keys(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (camel(&k), camel_keys(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(camel_keys).collect()),
        other => other,
    }
}

/// The snapshot detail: why each item was selected or dropped, with its
/// section, score, citation and compression, and the budget.
pub fn detail_json(d: &Detail) -> Value {
    let s = &d.snapshot;
    let items: Vec<Value> = s
        .entries
        .iter()
        .map(|e| {
            let mut item = json!({
                "itemId": e.id,
                "section": e.section,
                "layer": e.layer,
                "origin": e.origin,
                "citation": camel_keys(serde_json::to_value(&e.provenance).unwrap_or(Value::Null)),
                "trustTier": e.trust,
                "score": e.score,
                "tokens": e.tokens,
                "counted": e.counted,
                "included": e.included,
                "dropReason": (!e.included).then(|| e.reason.name()),
                "reason": camel_keys(serde_json::to_value(&e.reason).unwrap_or(Value::Null)),
                "compressed": e.compressed,
                "redacted": e.redacted,
            });
            if let Some(run) = &e.run {
                item["run"] = json!({"lastId": run.last_id, "count": run.count});
            }
            item
        })
        .collect();
    json!({
        "contextSnapshotId": s.id,
        "tenantId": s.tenant_id,
        "projectId": s.project_id,
        "runId": s.run_id,
        "attemptId": s.attempt_id,
        "sessionId": d.session_id,
        "traceId": d.trace_id,
        "assembledAt": d.assembled_at,
        "status": s.status,
        "failure": s.failure,
        "tokenizer": s.tokenizer,
        "tokenBudget": s.token_budget,
        "tokensUsed": s.tokens_used,
        "textTokens": s.text_tokens,
        "messageTokens": s.message_tokens,
        "stablePrefixTokens": s.stable_prefix_tokens,
        "scopes": s.scopes,
        "indexRevisions": s.index_revisions,
        "memoryItems": s.memory_items,
        "contentRef": format!("sha256:{}", s.content_hash),
        "planRef": format!("sha256:{}", ctxpack_core::text_hash(&json(&s.plan))),
        "plan": camel_keys(serde_json::to_value(&s.plan).unwrap_or(Value::Null)),
        "profile": camel_keys(serde_json::to_value(s.profile).unwrap_or(Value::Null)),
        "sourceCalls": camel_keys(serde_json::to_value(&s.source_calls).unwrap_or(Value::Null)),
        "compression": camel_keys(serde_json::to_value(&d.compression).unwrap_or(Value::Null)),
        "compressions": camel_keys(serde_json::to_value(&s.compressions).unwrap_or(Value::Null)),
        "deletedCitations": d.deleted_citations.iter()
            .map(|(source, at)| json!({"sourceId": source, "recordedAt": at}))
            .collect::<Vec<_>>(),
        "items": items,
    })
}
