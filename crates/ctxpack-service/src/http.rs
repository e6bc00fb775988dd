//! The HTTP API (the seed's, under `/factory`), plus `/metrics`,
//! `/healthz` and `/readyz`. Every `/factory` request carries a bearer
//! token (see [`crate::auth`]) naming its tenant; a tenant reads only its
//! own snapshots (another tenant's id answers 404, as an id that does not
//! exist). Lists and details are paginated.
//!
//! Answers are JSON with camelCase keys; errors are
//! `{"error": {"code": …, "message": …}}`, the message naming the field at
//! fault.

use crate::auth::{Caller, Refusal, Scope};
use crate::camel::camel_keys;
use crate::ids::echo;
use crate::service::{AssembleError, Service, check_id};
use crate::snapshots::{Detail, json, now_rfc3339};
use crate::trace::RequestIds;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, MatchedPath, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the HTTP routes share.
#[derive(Clone)]
pub struct Http {
    /// The service.
    pub service: Arc<Service>,
    /// Most time a request body may take to arrive.
    pub body_timeout: Duration,
}

/// The routes, with `max_body` bytes as the most a request body may hold.
/// `/metrics` asks for `factory.metrics.read` here; [`metrics_router`]
/// serves it on a listener of its own.
pub fn router(http: Http, max_body: usize) -> Router {
    let service = http.service.clone();
    Router::new()
        .route(
            "/factory/runs/{run_id}/attempts/{attempt_id}/context",
            post(assemble),
        )
        .route("/factory/runs/{run_id}/context-snapshots", get(list))
        .route("/factory/context-snapshots/{id}", get(detail))
        .route("/factory/context-snapshots/{id}/content", get(content))
        .route("/factory/sources/{id}/deleted", post(source_deleted))
        .route("/metrics", get(guarded_metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .fallback(|| async {
            error(
                StatusCode::NOT_FOUND,
                "not-found",
                "no such route; see the API in the service's README",
            )
        })
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(http)
        .layer(axum::middleware::from_fn_with_state(service, observe))
}

/// `/metrics`, `/healthz` and `/readyz` for a listener of their own
/// (`--metrics-listen`), open to whoever reaches it.
pub fn metrics_router(service: Arc<Service>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(service.clone())
        .layer(axum::middleware::from_fn_with_state(service, observe))
}

impl axum::extract::FromRef<Http> for Arc<Service> {
    fn from_ref(h: &Http) -> Arc<Service> {
        h.service.clone()
    }
}

/// Most characters of an error message: a value a client sent is quoted
/// by [`echo`], and nothing else grows with the request.
const MESSAGE: usize = 512;

fn error(status: StatusCode, code: &str, message: impl std::fmt::Display) -> Response {
    let mut message = message.to_string();
    if message.len() > MESSAGE {
        message.truncate(message.floor_char_boundary(MESSAGE));
        message.push('…');
    }
    (
        status,
        axum::Json(json!({"error": {"code": code, "message": message}})),
    )
        .into_response()
}

/// Every request: its ids, a span carrying them, its answer counted by
/// route and status, and a log line for every refusal (4xx and 5xx).
async fn observe(State(service): State<Arc<Service>>, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let ids = RequestIds::of(req.headers());
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());
    let method = req.method().clone();
    req.extensions_mut().insert(ids.clone());
    let span = tracing::info_span!(
        "request",
        request_id = %ids.request_id,
        trace_id = %ids.trace_id,
        span_id = %ids.span_id,
    );
    let res = tracing::Instrument::instrument(next.run(req), span.clone()).await;
    let mut res = held(&service, res);
    let status = res.status();
    service
        .metrics
        .response("http", &format!("{method} {route}"), status.as_str());
    if status.is_client_error() || status.is_server_error() {
        span.in_scope(|| {
            tracing::info!(
                target: "ctxpack::http",
                %method, route, status = status.as_u16(),
                ms = started.elapsed().as_secs_f64() * 1e3,
                "refused"
            )
        });
    }
    let h = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&ids.request_id) {
        h.insert("x-request-id", v);
    }
    if let Ok(v) = HeaderValue::from_str(&ids.traceparent()) {
        h.insert("traceparent", v);
    }
    if status == StatusCode::SERVICE_UNAVAILABLE && !h.contains_key(header::RETRY_AFTER) {
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    res
}

/// The path's parameters, or a JSON 400 naming what is wrong with them
/// (axum's own answer is plain text).
struct Ids<T>(T);

impl<T, S> axum::extract::FromRequestParts<S> for Ids<T>
where
    T: serde::de::DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Response> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(t)) => Ok(Ids(t)),
            Err(e) => Err(error(
                StatusCode::BAD_REQUEST,
                "invalid-request",
                format!("path: {}", e.body_text()),
            )),
        }
    }
}

/// Answers over [`LARGE`] hold their size (in KiB) of the service's
/// sending budget until sent or dropped; past the budget, 503 with
/// Retry-After: a crowd of clients that never read their answers holds a
/// bounded amount of memory (and the send timeout frees it).
fn held(service: &Service, res: Response) -> Response {
    use axum::body::HttpBody;
    let size = res.body().size_hint().upper().unwrap_or(u64::MAX);
    if size <= LARGE || res.extensions().get::<Budgeted>().is_some() {
        return res;
    }
    match service.sending.take(size) {
        Some(permit) => res.map(|body| Body::new(Held::new(body, permit))),
        None => busy(size),
    }
}

/// An answer that holds its part of the sending budget already.
#[derive(Clone, Copy)]
struct Budgeted;

/// 503: the sending budget is spent.
fn busy(size: u64) -> Response {
    tracing::warn!(target: "ctxpack::http", bytes = size, "answer refused: too many large answers being sent");
    let mut res = error(
        StatusCode::SERVICE_UNAVAILABLE,
        "busy",
        "too many large answers are being sent; retry",
    );
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    res
}

/// Answers larger than this hold part of the sending budget.
const LARGE: u64 = 64 << 10;

/// A body holding its part of the sending budget, given to the connection
/// in slices of [`SLICE`] so that it is held until the client has taken
/// nearly all of it (a whole body in one frame would leave the budget at
/// once and wait in the connection's buffer).
struct Held {
    body: Body,
    rest: Bytes,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

const SLICE: usize = 64 << 10;

impl Held {
    fn new(body: Body, permit: tokio::sync::OwnedSemaphorePermit) -> Self {
        Held {
            body,
            rest: Bytes::new(),
            _permit: permit,
        }
    }
}

impl axum::body::HttpBody for Held {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, axum::Error>>> {
        use std::task::Poll;
        let this = self.get_mut();
        if this.rest.is_empty() {
            match std::pin::Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => this.rest = data,
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
                other => return other,
            }
        }
        let n = this.rest.len().min(SLICE);
        Poll::Ready(Some(Ok(hyper::body::Frame::data(this.rest.split_to(n)))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        let mut hint = self.body.size_hint();
        let rest = self.rest.len() as u64;
        hint.set_lower(hint.lower() + rest);
        if let Some(upper) = hint.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

/// The caller of a request: its token verified (or, without
/// authentication, its `x-tenant-id`), and its tenant within the rate
/// limit. Refused before its handler runs.
struct Authed(Caller);

impl axum::extract::FromRequestParts<Http> for Authed {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        http: &Http,
    ) -> Result<Self, Response> {
        let all = |name| {
            parts
                .headers
                .get_all(name)
                .iter()
                .map(HeaderValue::as_bytes)
                .collect::<Vec<_>>()
        };
        let service = &http.service;
        let caller = service
            .auth
            .caller(
                &all(header::AUTHORIZATION),
                &all(header::HeaderName::from_static("x-tenant-id")),
            )
            .await
            .map_err(|e| refusal(&e))?;
        if let Err(t) = service.admit(&caller.tenant) {
            let mut res = error(StatusCode::TOO_MANY_REQUESTS, "rate-limited", &t.message);
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(t.retry_after_s));
            return Err(res);
        }
        Ok(Authed(caller))
    }
}

fn refusal(e: &Refusal) -> Response {
    match e {
        Refusal::Unauthenticated(_) => {
            let mut res = error(StatusCode::UNAUTHORIZED, "unauthenticated", e);
            res.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"ctxpack\", error=\"invalid_token\""),
            );
            res
        }
        Refusal::Forbidden(_) => error(StatusCode::FORBIDDEN, "forbidden", e),
        Refusal::Invalid(_) => error(StatusCode::BAD_REQUEST, "invalid-request", e),
    }
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

/// Reads a request body within the body timeout.
async fn read_body(body: Body, timeout: Duration, most: usize) -> Result<Bytes, Response> {
    use http_body_util::BodyExt;
    match tokio::time::timeout(timeout, http_body_util::Limited::new(body, most).collect()).await {
        Err(_) => Err(error(
            StatusCode::REQUEST_TIMEOUT,
            "body-timeout",
            format!("request body: not received within {timeout:?}"),
        )),
        Ok(Err(e)) => {
            if e.is::<http_body_util::LengthLimitError>() {
                Err(error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "invalid-request",
                    format!("request body: larger than {most} bytes"),
                ))
            } else {
                Err(error(
                    StatusCode::BAD_REQUEST,
                    "invalid-request",
                    format!("request body: {e}"),
                ))
            }
        }
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

async fn assemble(
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
    let body = match read_body(req.into_body(), http.body_timeout, most).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let tenant = caller.tenant;
    let result = service.assemble(&tenant, &run_id, &attempt_id, &body).await;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    match result {
        Ok(reply) => {
            tracing::info!(
                target: "ctxpack::assemble",
                tenant, subject = caller.subject, run_id, attempt_id,
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

/// A page of a list: `limit` (at most 1,000) from after `after`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ListPage {
    limit: Option<u64>,
    after: Option<String>,
}

/// The default and the largest page of a run's snapshots.
pub const LIST_PAGE: (u64, u64) = (100, 1000);
/// The default and the largest page of a snapshot's items.
pub const ITEMS_PAGE: (u64, u64) = (500, 5000);

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

fn bad_query(e: impl std::fmt::Display) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "invalid-request",
        format!("query string: {e}"),
    )
}

async fn list(
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
struct ItemsPage {
    items_offset: Option<u64>,
    items_limit: Option<u64>,
}

async fn detail(
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

async fn content(
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

async fn source_deleted(
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
            tracing::info!(target: "ctxpack::lineage", tenant, subject = caller.subject, source_id, marked, "source deleted");
            axum::Json(json!({"sourceId": source_id, "snapshotsMarked": marked})).into_response()
        }
        Err(e) => reject(&e.into()),
    }
}

/// `/metrics` on the main listener: for a token granting
/// `factory.metrics.read` (any caller without authentication).
async fn guarded_metrics(State(service): State<Arc<Service>>, headers: HeaderMap) -> Response {
    if let crate::auth::Auth::Jwt(v) = &service.auth {
        let sent: Vec<&[u8]> = headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .map(HeaderValue::as_bytes)
            .collect();
        let caller = match crate::auth::bearer(&sent) {
            Ok(token) => v.verify(token).await,
            Err(e) => Err(e),
        };
        if let Err(e) = caller.and_then(|c| c.may(Scope::MetricsRead)) {
            return refusal(&e);
        }
    }
    metrics(State(service)).await
}

async fn metrics(State(service): State<Arc<Service>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        service.metrics.render(),
    )
        .into_response()
}

/// Whether the service can take assemblies: its store takes a write and
/// its broker (when events are relayed) is connected. 503 with the reason
/// and Retry-After when not.
async fn readyz(State(service): State<Arc<Service>>) -> Response {
    let ready = service.readiness().await;
    let status = if ready.ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let mut res = (
        status,
        axum::Json(serde_json::to_value(&ready).unwrap_or(Value::Null)),
    )
        .into_response();
    if !ready.ok {
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    }
    res
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
        "fence": camel_keys(serde_json::to_value(&s.fence).unwrap_or(Value::Null)),
        "deletedCitations": d.deleted_citations.iter()
            .map(|(source, at)| json!({"sourceId": source, "recordedAt": at}))
            .collect::<Vec<_>>(),
        "itemsTotal": d.items_total,
        "itemsOffset": d.items_offset,
        "nextItemsOffset": next_items,
        "items": items,
    })
}
