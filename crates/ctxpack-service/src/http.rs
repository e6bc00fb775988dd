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
        .route("/readyz", get(ops::public_readyz))
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
pub(super) struct Why(pub(super) String);

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
async fn observe(State(service): State<Arc<Service>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let (req, unread) = noted(req);
    let res = answer(&service, req, next, started).await;
    closing(res, &unread).await
}

/// Most bytes of a request's body left unread by its answer (a refusal)
/// that are read and dropped so its connection takes the next request.
const DRAIN_BYTES: usize = 1 << 20;

/// Most time reading them may take.
const DRAIN_TIME: Duration = Duration::from_secs(1);

/// What a request's body left unread: the body, once its handler let go
/// of it before its end.
type Unread = Arc<std::sync::Mutex<Option<axum::body::Body>>>;

/// `req` with a body that, dropped before its end, is kept in the
/// returned slot.
fn noted(req: Request) -> (Request, Unread) {
    let unread: Unread = Arc::default();
    let slot = unread.clone();
    let req = req.map(|inner| {
        axum::body::Body::new(Noted {
            inner,
            unread: slot,
        })
    });
    (req, unread)
}

/// An answer given before its request's body was read to the end (a
/// refusal: the caller, its rate, the body's size or type): the rest of
/// a body of at most [`DRAIN_BYTES`] that arrives within [`DRAIN_TIME`]
/// is read and dropped, so the connection takes the client's next
/// request; otherwise the answer closes the connection and says so
/// (`Connection: close`). Either way the client reads the answer — its
/// status and `Retry-After` — instead of failing to write to a
/// connection closed under it.
async fn closing(mut res: Response, unread: &Unread) -> Response {
    use http_body_util::BodyExt;
    let left = unread.lock().ok().and_then(|mut slot| slot.take());
    let Some(body) = left else {
        return res;
    };
    let small = http_body::Body::size_hint(&body)
        .upper()
        .is_some_and(|n| n <= DRAIN_BYTES as u64);
    let drained = small
        && matches!(
            tokio::time::timeout(
                DRAIN_TIME,
                http_body_util::Limited::new(body, DRAIN_BYTES).collect()
            )
            .await,
            Ok(Ok(_))
        );
    if !drained {
        res.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    res
}

/// A request's body; dropped before its end, it leaves itself in
/// `unread`.
struct Noted {
    inner: axum::body::Body,
    unread: Unread,
}

impl Drop for Noted {
    fn drop(&mut self) {
        if !http_body::Body::is_end_stream(&self.inner)
            && let Ok(mut slot) = self.unread.lock()
        {
            *slot = Some(std::mem::replace(
                &mut self.inner,
                axum::body::Body::empty(),
            ));
        }
    }
}

impl http_body::Body for Noted {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The answer to `req`, counted, logged and carrying its ids (see
/// [`observe`]).
async fn answer(
    service: &Arc<Service>,
    mut req: Request,
    next: Next,
    started: Instant,
) -> Response {
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
    let mut res = budget::held(service, res);
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
