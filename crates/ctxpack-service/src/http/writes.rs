//! What changes the store: an assembly (`POST …/context`), and a source
//! marked deleted (`POST /factory/sources/{id}/deleted`).

use super::Http;
use super::request::{Authed, Ids, declared_over, not_json, read_body, refusal, reject, too_large};
use crate::auth::Scope;
use crate::service::{AssembleError, Service, check_id};
use crate::snapshots::{json, now_rfc3339};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

/// `POST /factory/runs/{runId}/attempts/{attemptId}/context`: assembles,
/// records and answers the snapshot (201, 200 for a replay, 422 for a
/// failed assembly with its snapshot).
pub(super) async fn assemble(
    State(http): State<Http>,
    Ids((run_id, attempt_id)): Ids<(String, String)>,
    Authed(caller): Authed,
    req: Request,
) -> Response {
    if let Err(e) = caller.may(Scope::Assemble) {
        return refusal(&e);
    }
    // Checked before they are logged.
    if let Err(e) = check_id("runId", &run_id).and_then(|()| check_id("attemptId", &attempt_id)) {
        return reject(&e);
    }
    let started = Instant::now();
    let service = &http.service;
    let most = service.max_body;
    if declared_over(req.headers(), most) {
        return too_large(most);
    }
    if let Some(refused) = not_json(req.headers()) {
        return refused;
    }
    let body = match read_body(req.into_body(), http.body_timeout, most).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let result = service.assemble(&caller, &run_id, &attempt_id, &body).await;
    let tenant = caller.tenant;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    match result {
        Ok(reply) => {
            tracing::info!(
                target: "ctxpack::assemble",
                tenant, subject = %crate::trace::cut(&caller.subject), run_id, attempt_id,
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

/// `POST /factory/sources/{sourceId}/deleted`: marks the source deleted
/// in the snapshots that cite it.
pub(super) async fn source_deleted(
    State(service): State<Arc<Service>>,
    Ids(source_id): Ids<String>,
    Authed(caller): Authed,
) -> Response {
    if let Err(e) = caller.may(Scope::SourcesDelete) {
        return refusal(&e);
    }
    if let Err(e) = check_id("sourceId", &source_id) {
        return reject(&e);
    }
    let tenant = caller.tenant;
    match service
        .store
        .source_deleted(&tenant, &source_id, &now_rfc3339())
        .await
    {
        Ok(marked) => {
            tracing::info!(target: "ctxpack::lineage", tenant, subject = %crate::trace::cut(&caller.subject), source_id, marked, "source deleted");
            axum::Json(json!({"sourceId": source_id, "snapshotsMarked": marked})).into_response()
        }
        Err(e) => reject(&e.into()),
    }
}
