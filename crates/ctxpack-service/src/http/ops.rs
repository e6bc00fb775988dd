//! For operators: `/metrics` (guarded on the main listener, open on the
//! metrics listener) and `/readyz`.

use super::request::refusal;
use crate::auth::Scope;
use crate::service::Service;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::sync::Arc;

/// `/metrics` on the main listener: for a token granting
/// `factory.metrics.read` (any caller without authentication), its
/// tenant's series alone unless it acts for the platform.
pub(super) async fn guarded_metrics(
    State(service): State<Arc<Service>>,
    headers: HeaderMap,
) -> Response {
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
        let caller = match caller.and_then(|c| c.may(Scope::MetricsRead).map(|()| c)) {
            Ok(c) => c,
            Err(e) => return refusal(&e),
        };
        if !caller.platform {
            return (
                [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                service.metrics.render_for(&caller.tenant),
            )
                .into_response();
        }
    }
    metrics(State(service)).await
}

/// The API's description (see [`crate::openapi`]), open to every caller:
/// it says nothing of any tenant. Without `[auth]`
/// (`--insecure-dev-no-auth`) it asks no operation for a token.
pub(super) async fn openapi(State(service): State<Arc<Service>>) -> Response {
    let callers = match service.auth {
        crate::auth::Auth::Off => crate::openapi::Callers::Anyone,
        _ => crate::openapi::Callers::Tokens,
    };
    (
        [(header::CONTENT_TYPE, "application/json")],
        crate::openapi::text_for(callers),
    )
        .into_response()
}

/// The metrics, in Prometheus' text format.
pub(super) async fn metrics(State(service): State<Arc<Service>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        service.metrics.render(),
    )
        .into_response()
}

/// Whether the service can take assemblies: its store takes a write. 503
/// with the reason and Retry-After when not. A broker (when events are
/// relayed) that is not connected does not make it unready — the outbox
/// keeps every event and assemblies go on — but `degraded`, with the
/// broker's state.
pub(super) async fn readyz(State(service): State<Arc<Service>>) -> Response {
    ready(service.readiness().await)
}

/// [`readyz`] on the API's listener, open to whoever reaches it: why the
/// store or the artifact store is not ready (an endpoint, a bucket, a
/// path) is logged, and answered only on the metrics listener.
pub(super) async fn public_readyz(State(service): State<Arc<Service>>) -> Response {
    let mut ready = service.readiness().await;
    for (what, why) in [
        ("store", &mut ready.store),
        ("artifacts", &mut ready.artifacts),
    ] {
        if why != "ok" {
            tracing::warn!(target: "ctxpack::ready", what, why = %why, "not ready");
            *why = "unavailable; the service's log says why".to_owned();
        }
    }
    self::ready(ready)
}

fn ready(ready: crate::service::Readiness) -> Response {
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
