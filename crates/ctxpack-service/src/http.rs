//! The HTTP API (the seed's, under `/factory`), plus `/metrics`,
//! `/healthz` and `/readyz`. Every `/factory` request carries a bearer
//! token (see [`crate::auth`]) naming its tenant; a tenant reads only its
//! own snapshots (another tenant's id answers 404, as an id that does not
//! exist). Lists and details are paginated.
//!
//! Answers are JSON with camelCase keys; errors are
//! `{"error": {"code": …, "message": …}}`, the message naming the field at
//! fault.
//!
//! By concern: what a request carries and how it is refused
//! (`request`), assembling and marking a source deleted (`writes`),
//! reading snapshots back (`reads`), the sending budget large answers
//! hold (`budget`), and `/metrics`, `/healthz` and `/readyz` (`ops`).

mod budget;
mod ops;
mod reads;
mod request;
mod writes;

pub use reads::{ITEMS_PAGE, LIST_PAGE, detail_json};

use crate::service::Service;
use crate::trace::RequestIds;
use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
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
            post(writes::assemble),
        )
        .route("/factory/runs/{run_id}/context-snapshots", get(reads::list))
        .route("/factory/context-snapshots/{id}", get(reads::detail))
        .route(
            "/factory/context-snapshots/{id}/content",
            get(reads::content),
        )
        .route(
            "/factory/sources/{id}/deleted",
            post(writes::source_deleted),
        )
        .route("/metrics", get(ops::guarded_metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ops::readyz))
        .route("/openapi.json", get(ops::openapi))
        .fallback(|| async {
            error(
                StatusCode::NOT_FOUND,
                "not-found",
                "no such route; see the API in /openapi.json and the service's README",
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
        .route("/metrics", get(ops::metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ops::readyz))
        .with_state(service.clone())
        .layer(axum::middleware::from_fn_with_state(service, observe))
}

impl axum::extract::FromRef<Http> for Arc<Service> {
    fn from_ref(h: &Http) -> Arc<Service> {
        h.service.clone()
    }
}

/// Most characters of an error message: a value a client sent is quoted
/// by [`crate::ids::echo`], and nothing else grows with the request.
const MESSAGE: usize = 512;

/// The JSON error answer: `status`, with `code` and `message` (cut to
/// [`MESSAGE`] characters).
pub(super) fn error(status: StatusCode, code: &str, message: impl std::fmt::Display) -> Response {
    let mut message = message.to_string();
    if message.len() > MESSAGE {
        message.truncate(message.floor_char_boundary(MESSAGE));
        message.push('…');
    }
    let mut res = (
        status,
        axum::Json(json!({"error": {"code": code, "message": &message}})),
    )
        .into_response();
    res.extensions_mut().insert(Why(message));
    res
}

/// Why an answer refused, for its log line (see [`observe`]).
#[derive(Clone)]
struct Why(String);

/// Whether `req` names a loopback host (its `Host`, or its URI's authority
/// over HTTP/2): `localhost`, `127.x.x.x` or `[::1]`, any port.
fn loopback_host(req: &Request) -> bool {
    let host = req
        .headers()
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()));
    let Some(host) = host else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A request's method as a label of a closed set: HTTP's own methods, and
/// `OTHER` for any a client makes up (each would otherwise be a metric's
/// series of its own, and a log field as long as the client made it).
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
        Method::CONNECT,
        Method::TRACE,
    ]
    .iter()
    .find(|m| *m == method)
    .map_or("OTHER", |m| m.as_str())
}

/// Every request: its ids, a span carrying them, its answer counted by
/// route and status, and a log line for a refusal (4xx and 5xx) with its
/// reason — at most [`crate::trace::REFUSAL_LINES`] a second, the next
/// line saying how many were left out (`suppressed`).
async fn observe(State(service): State<Arc<Service>>, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    if matches!(service.auth, crate::auth::Auth::Off) && !loopback_host(&req) {
        // A page elsewhere whose name a DNS answer points at this machine
        // (DNS rebinding) must not reach a service that checks no caller.
        let res = error(
            StatusCode::MISDIRECTED_REQUEST,
            "not-loopback",
            "--insecure-dev-no-auth answers requests for a loopback host only (localhost, 127.0.0.1, [::1])",
        );
        service
            .metrics
            .response("http", "misdirected", res.status().as_str());
        return res;
    }
    let ids = RequestIds::of(req.headers());
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());
    let method = method_label(req.method());
    req.extensions_mut().insert(ids.clone());
    let span = tracing::info_span!(
        "request",
        request_id = %ids.request_id,
        trace_id = %ids.trace_id,
        span_id = %ids.span_id,
    );
    let res = tracing::Instrument::instrument(next.run(req), span.clone()).await;
    let mut res = budget::held(&service, res);
    let status = res.status();
    service
        .metrics
        .response("http", &format!("{method} {route}"), status.as_str());
    if (status.is_client_error() || status.is_server_error())
        && let Some(suppressed) = crate::trace::refusal_line()
    {
        let why = res.extensions().get::<Why>().map_or("", |w| w.0.as_str());
        span.in_scope(|| {
            tracing::info!(
                target: "ctxpack::http",
                %method, route, status = status.as_u16(), reason = why,
                ms = started.elapsed().as_secs_f64() * 1e3,
                suppressed,
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
