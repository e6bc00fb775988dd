//! The sending budget: answers over [`LARGE`] hold their size of the
//! service's budget until they are sent or dropped; past it, 503 with
//! Retry-After.

use super::error;
use crate::service::Service;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

/// Answers over [`LARGE`] hold their size (in KiB) of the service's
/// sending budget until sent or dropped; past the budget, 503 with
/// Retry-After: a crowd of clients that never read their answers holds a
/// bounded amount of memory (and the send timeout frees it).
pub(super) fn held(service: &Service, res: Response) -> Response {
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
pub(super) struct Budgeted;

/// 503: the sending budget is spent.
pub(super) fn busy(size: u64) -> Response {
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
pub(super) const LARGE: u64 = 64 << 10;

/// A body holding its part of the sending budget, given to the connection
/// in slices of [`SLICE`] so that it is held until the client has taken
/// nearly all of it (a whole body in one frame would leave the budget at
/// once and wait in the connection's buffer).
pub(super) struct Held {
    body: Body,
    rest: Bytes,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

const SLICE: usize = 64 << 10;

impl Held {
    /// `body`, holding `permit` until it is sent or dropped.
    pub(super) fn new(body: Body, permit: tokio::sync::OwnedSemaphorePermit) -> Self {
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
