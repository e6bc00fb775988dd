//! A small HTTP/1.1 client for the service (keep-alive, one connection
//! pool), used by the load generator and the tests.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as Hyper;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// A function told of every answer any client of the process receives:
/// the method, the path (with its query) and the answer.
pub type Observer = fn(&str, &str, &Answer);

static OBSERVER: std::sync::OnceLock<Observer> = std::sync::OnceLock::new();

/// Sets, once per process, the function told of every answer any client
/// receives (the service's tests hold each to the API description); a
/// second call changes nothing.
pub fn observe_answers(observer: Observer) {
    let _ = OBSERVER.set(observer);
}

/// A client of one service.
#[derive(Clone)]
pub struct Client {
    base: String,
    inner: Hyper<HttpConnector, Full<Bytes>>,
}

/// An answer.
#[derive(Clone, Debug)]
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// A header the tests look at.
    pub location: Option<String>,
    /// Every header.
    pub headers: hyper::HeaderMap,
    /// Body.
    pub body: Bytes,
}

/// Why a request got no answer: it could not be built, sent, or its
/// answer read. It reads as the underlying error does.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The request cannot be built (a header or path that is not HTTP).
    #[error("{0}")]
    Request(#[from] hyper::http::Error),
    /// The request could not be sent (no connection).
    #[error("{0}")]
    Send(#[from] hyper_util::client::legacy::Error),
    /// The answer's body could not be read.
    #[error("{0}")]
    Body(#[from] hyper::Error),
}

impl Answer {
    /// The body as JSON (`null` when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl Client {
    /// A client of the service at `base` (`http://127.0.0.1:8080`).
    pub fn new(base: impl Into<String>) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        Client {
            base: base.into(),
            inner: Hyper::builder(TokioExecutor::new()).build(connector),
        }
    }

    /// Sends one request; `tenant` as `x-tenant-id` when given.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        tenant: Option<&str>,
        body: impl Into<Bytes>,
    ) -> Result<Answer, ClientError> {
        let headers: Vec<(&str, &str)> = tenant.map(|t| ("x-tenant-id", t)).into_iter().collect();
        self.request(method, path, &headers, body).await
    }

    /// Sends one request with these headers (each sent as given, a name
    /// twice sent twice).
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Result<Answer, ClientError> {
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("content-type", "application/json");
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req.body(Full::new(body.into()))?;
        let res = self.inner.request(req).await?;
        let status = res.status().as_u16();
        let location = res
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let headers = res.headers().clone();
        let body = res.into_body().collect().await?.to_bytes();
        let answer = Answer {
            status,
            location,
            headers,
            body,
        };
        if let Some(observe) = OBSERVER.get() {
            observe(method, path, &answer);
        }
        Ok(answer)
    }
}
