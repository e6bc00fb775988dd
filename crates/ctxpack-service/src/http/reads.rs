//! Reading snapshots back: a run's snapshots by page, a snapshot's detail
//! (its items by page), its assembled text.

use super::budget::{Budgeted, Held, LARGE, busy};
use super::error;
use super::request::{Authed, Ids, refusal, reject};
use crate::auth::Scope;
use crate::camel::camel_keys;
use crate::ids::echo;
use crate::service::{Service, check_id};
use crate::snapshots::{Detail, json};
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// A page of a list: `limit` (at most 1,000) from after `after`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ListPage {
    limit: Option<u64>,
    after: Option<String>,
}

pub use crate::pages::{ITEMS_PAGE, LIST_PAGE};

/// A page size out of range: the query's field, the size asked, the
/// largest.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {given} is not from 1 to {most}")]
struct PageLimitError {
    field: &'static str,
    given: u64,
    most: u64,
}

/// The page's size: `given`, or the default.
fn page_limit(
    given: Option<u64>,
    (default, most): (u64, u64),
    field: &'static str,
) -> Result<u64, PageLimitError> {
    match given {
        None => Ok(default),
        Some(n) if (1..=most).contains(&n) => Ok(n),
        Some(n) => Err(PageLimitError {
            field,
            given: n,
            most,
        }),
    }
}

/// 400: the query string does not parse.
fn bad_query(e: impl std::fmt::Display) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "invalid-request",
        format!("query string: {e}"),
    )
}

/// `GET /factory/runs/{runId}/context-snapshots`: a page of the run's
/// snapshots, `nextAfter` naming the next.
pub(super) async fn list(
    State(service): State<Arc<Service>>,
    Ids(run_id): Ids<String>,
    Authed(caller): Authed,
    page: Result<Query<ListPage>, axum::extract::rejection::QueryRejection>,
) -> Response {
    if let Err(e) = caller.may(Scope::RunsRead) {
        return refusal(&e);
    }
    if let Err(e) = check_id("runId", &run_id) {
        return reject(&e);
    }
    let Query(page) = match page {
        Ok(p) => p,
        Err(e) => return bad_query(e.body_text()),
    };
    let limit = match page_limit(page.limit, LIST_PAGE, "limit") {
        Ok(l) => l,
        Err(e) => return error(StatusCode::BAD_REQUEST, "invalid-request", e),
    };
    if let Some(after) = &page.after
        && let Err(e) = check_id("after", after)
    {
        return reject(&e);
    }
    match service
        .store
        .list_page(&caller.tenant, &run_id, page.after.as_deref(), limit + 1)
        .await
    {
        Ok(mut snapshots) => {
            let more = snapshots.len() as u64 > limit;
            snapshots.truncate(limit as usize);
            let next_after = more
                .then(|| snapshots.last().map(|s| s.context_snapshot_id.clone()))
                .flatten();
            axum::Json(json!({"runId": run_id, "snapshots": snapshots, "nextAfter": next_after}))
                .into_response()
        }
        Err(e) => reject(&e.into()),
    }
}

/// A page of a snapshot's items.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ItemsPage {
    items_offset: Option<u64>,
    items_limit: Option<u64>,
}

/// `GET /factory/context-snapshots/{id}`: the snapshot's detail, a page
/// of its items.
pub(super) async fn detail(
    State(service): State<Arc<Service>>,
    Ids(id): Ids<String>,
    Authed(caller): Authed,
    page: Result<Query<ItemsPage>, axum::extract::rejection::QueryRejection>,
) -> Response {
    if let Err(e) = caller.may(Scope::RunsRead) {
        return refusal(&e);
    }
    if let Err(e) = check_id("contextSnapshotId", &id) {
        return reject(&e);
    }
    let Query(page) = match page {
        Ok(p) => p,
        Err(e) => return bad_query(e.body_text()),
    };
    let limit = match page_limit(page.items_limit, ITEMS_PAGE, "itemsLimit") {
        Ok(l) => l,
        Err(e) => return error(StatusCode::BAD_REQUEST, "invalid-request", e),
    };
    let offset = page.items_offset.unwrap_or(0).min(i64::MAX as u64);
    match service
        .store
        .get_page(&caller.tenant, &id, offset, limit)
        .await
    {
        Ok(Some(d)) => axum::Json(detail_json(&d)).into_response(),
        Ok(None) => not_found(&id),
        Err(e) => reject(&e.into()),
    }
}

/// 404: no snapshot `id` for this tenant (another tenant's is not told
/// apart from none).
fn not_found(id: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "not-found",
        format!(
            "contextSnapshotId: no snapshot {} for this tenant",
            echo(id)
        ),
    )
}

/// `GET /factory/context-snapshots/{id}/content`: the assembled text,
/// holding its part of the sending budget.
pub(super) async fn content(
    State(service): State<Arc<Service>>,
    Ids(id): Ids<String>,
    Authed(caller): Authed,
) -> Response {
    if let Err(e) = caller.may(Scope::RunsRead) {
        return refusal(&e);
    }
    if let Err(e) = check_id("contextSnapshotId", &id) {
        return reject(&e);
    }
    // The budget is taken before the text is read: a crowd asking for a
    // large text is refused before each copy is in memory.
    let permit = match service.store.content_size(&caller.tenant, &id).await {
        Ok(None) => return not_found(&id),
        Ok(Some(size)) if size > LARGE => match service.sending.take(size) {
            Some(p) => Some(p),
            None => return busy(size),
        },
        Ok(Some(_)) => None,
        Err(e) => return reject(&e.into()),
    };
    match service.store.content_of(&caller.tenant, &id).await {
        Ok(Some(text)) => {
            let mut res =
                ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response();
            if let Some(permit) = permit {
                res = res.map(|body| Body::new(Held::new(body, permit)));
                res.extensions_mut().insert(Budgeted);
            }
            res
        }
        Ok(None) => not_found(&id),
        Err(e) => reject(&e.into()),
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
    let end = d.items_offset + items.len() as u64;
    let next_items = (end < d.items_total).then_some(end);
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
        "model": camel_keys(serde_json::to_value(&s.model).unwrap_or(Value::Null)),
        "tokenBudget": s.token_budget,
        "tokensUsed": s.tokens_used,
        "textTokens": s.text_tokens,
        "messageTokens": s.message_tokens,
        "stablePrefixTokens": s.stable_prefix_tokens,
        "cachePrefixes": camel_keys(serde_json::to_value(&s.cache_prefixes).unwrap_or(Value::Null)),
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
        "fence": camel_keys(serde_json::to_value(&s.fence).unwrap_or(Value::Null)),
        "chat": camel_keys(serde_json::to_value(&s.chat).unwrap_or(Value::Null)),
        "deletedCitations": d.deleted_citations.iter()
            .map(|(source, at)| json!({"sourceId": source, "recordedAt": at}))
            .collect::<Vec<_>>(),
        "itemsTotal": d.items_total,
        "itemsOffset": d.items_offset,
        "nextItemsOffset": next_items,
        "items": items,
    })
}
