//! What a request carries, read or refused before its handler runs: the
//! path's ids, the caller (its token and its tenant's rate), the body
//! within its timeout; and the answers refusing it.

use super::{Http, error};
use crate::auth::{Caller, Refusal};
use crate::service::AssembleError;
use axum::body::{Body, Bytes};
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use std::time::Duration;

/// The path's parameters, or a JSON 400 naming what is wrong with them
/// (axum's own answer is plain text).
pub(super) struct Ids<T>(pub(super) T);

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

/// The caller of a request: its token verified (or, without
/// authentication, its `x-tenant-id`), and its tenant within the rate
/// limit. Refused before its handler runs.
pub(super) struct Authed(pub(super) Caller);

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
        if let Err(t) = service.admit(&caller.tenant).await {
            let mut res = error(StatusCode::TOO_MANY_REQUESTS, "rate-limited", &t.message);
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(t.retry_after_s));
            return Err(res);
        }
        Ok(Authed(caller))
    }
}

pub(super) fn refusal(e: &Refusal) -> Response {
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

pub(super) fn reject(e: &AssembleError) -> Response {
    let status = match e {
        AssembleError::Invalid(_) => StatusCode::BAD_REQUEST,
        AssembleError::Forbidden(_) => StatusCode::FORBIDDEN,
        AssembleError::Failed(_) => StatusCode::UNPROCESSABLE_ENTITY,
        AssembleError::AttemptTaken(_) => StatusCode::CONFLICT,
        AssembleError::Deadline(_) | AssembleError::Interrupted(_) => StatusCode::GATEWAY_TIMEOUT,
        AssembleError::Wasm(_) => StatusCode::INTERNAL_SERVER_ERROR,
        // What was written cannot be read back: not a passing fault.
        AssembleError::Store(crate::snapshots::StoreError::Corrupt { .. }) => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
        AssembleError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
    };
    let mut res = error(status, e.code(), e.told());
    if e.is_internal() {
        // The log line has the detail the answer leaves out.
        res.extensions_mut().insert(super::Why(e.to_string()));
    }
    res
}

/// The answer to a body over `most` bytes.
pub(super) fn too_large(most: usize) -> Response {
    error(
        StatusCode::PAYLOAD_TOO_LARGE,
        "invalid-request",
        format!("request body: larger than {most} bytes"),
    )
}

/// A 415 unless `headers` declare the body `application/json` (with any
/// parameters): a body of another type is not read as JSON.
pub(super) fn not_json(headers: &axum::http::HeaderMap) -> Option<Response> {
    let declared = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let essence = declared.as_deref().map(|v| {
        v.split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    });
    if essence.as_deref() == Some("application/json") {
        return None;
    }
    let said = match &declared {
        None => "no Content-Type".to_owned(),
        Some(v) => {
            let mut v = v.clone();
            v.truncate(v.floor_char_boundary(100));
            format!("Content-Type {v:?}")
        }
    };
    Some(error(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported-media-type",
        format!("request body: {said}; send it as application/json"),
    ))
}

/// Whether `headers` declare a body over `most` bytes (`Content-Length`):
/// refused before a byte of it is read, so a client that waits for
/// `100 Continue` is told 413 instead.
pub(super) fn declared_over(headers: &axum::http::HeaderMap, most: usize) -> bool {
    headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > most as u64)
}

/// Reads a request body within the body timeout.
pub(super) async fn read_body(
    body: Body,
    timeout: Duration,
    most: usize,
) -> Result<Bytes, Response> {
    use http_body_util::BodyExt;
    match tokio::time::timeout(timeout, http_body_util::Limited::new(body, most).collect()).await {
        Err(_) => Err(error(
            StatusCode::REQUEST_TIMEOUT,
            "body-timeout",
            format!("request body: not received within {timeout:?}"),
        )),
        Ok(Err(e)) => {
            if e.is::<http_body_util::LengthLimitError>() {
                Err(too_large(most))
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
