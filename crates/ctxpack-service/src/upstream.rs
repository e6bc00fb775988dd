//! Connectors to the user's stores: each capability the component calls
//! (`sources.retrieve`, …, `policy.review`, `summarizer.summarize`) answered
//! by an upstream over gRPC (`proto/ctxpack/stores/v1/stores.proto`) or
//! over HTTP with JSON (the component's JSON step shapes).
//!
//! Per upstream: an address, a timeout per attempt, a concurrency limit,
//! retries with exponential backoff and jitter (every call is a read), and
//! a bearer token. What a failure means is the core's, as the seed's
//! dependencies table has it: a source's or the summariser's degrades the
//! assembly, the policy's fails it. An answer of the wrong shape is a
//! failure naming the field, never retried; a timeout, a refused
//! connection, gRPC `UNAVAILABLE`/`DEADLINE_EXCEEDED`/`RESOURCE_EXHAUSTED`
//! and HTTP 429/502/503/504 are retried.
//!
//! Over HTTP, a call is one `POST` to the upstream's URL with
//! `{"context": …, "call": {"retrieve": {"query": …, "limit": …}}}` (the
//! call keyed by the import's name, as a step writes it), answered `200`
//! with `{"ok": …}` or `{"err": {"capability": …, "message": …}}`.
//!
//! Apart: TLS to an upstream (`tls`), the codec for messages known by
//! their descriptors (`codec`), and why an upstream cannot be set up
//! ([`UpstreamError`], `error`).

mod codec;
mod error;
mod tls;

pub use error::UpstreamError;
pub use tls::Tls;

use crate::protojson;
use bytes::Bytes;
use codec::DynamicCodec;
use ctxpack_core::json::read_answer;
use ctxpack_core::text::cut;
use ctxpack_core::{AgentContext, Answer, Call, HostError};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client as Hyper;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use prost_reflect::{DynamicMessage, MethodDescriptor};
use std::time::Duration;
use tokio::sync::Semaphore;
use tonic::codegen::http;

/// The most bytes an upstream's answer may have, by default
/// (`max-answer-bytes`).
pub const MAX_ANSWER_BYTES: usize = 64 << 20;

/// `url` as it may be logged: a password in it (`scheme://user:secret@host`)
/// written `***`, the rest as it is.
pub fn masked(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let authority_end = cut(url, scheme_end..)
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| scheme_end + i);
    let Some(at) = cut(url, scheme_end..authority_end)
        .rfind('@')
        .map(|i| scheme_end + i)
    else {
        return url.to_owned();
    };
    match cut(url, scheme_end..at).find(':') {
        Some(colon) => format!("{}:***{}", cut(url, ..scheme_end + colon), cut(url, at..)),
        None => url.to_owned(),
    }
}

/// How an upstream is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// gRPC at this URI (`http://host:port`).
    Grpc(String),
    /// HTTP with JSON, `POST` to this URL.
    Http(String),
}

/// One upstream's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Where it is.
    pub address: Address,
    /// Most time per attempt.
    pub timeout: Duration,
    /// Most calls in flight at once; more wait.
    pub concurrency: usize,
    /// Attempts after the first, for a failure worth retrying (an answer
    /// over `max_answer_bytes` is not: it would be as large again).
    pub retries: u32,
    /// The most bytes an answer may have.
    pub max_answer_bytes: usize,
    /// The first retry's wait; each next one doubles it (with jitter).
    pub backoff: Duration,
    /// Sent as `authorization: Bearer …`.
    pub token: Option<String>,
    /// The model profile summaries are made with (the seed's
    /// `CompressionProfile`), sent as `x-compression-profile`.
    pub compression_profile: Option<String>,
    /// The index it serves, which an `IndexDegraded` event names.
    pub index: Option<String>,
    /// For an `https://` address: the roots and the client certificate.
    pub tls: Option<Tls>,
}

enum Transport {
    Grpc {
        channel: tonic::transport::Channel,
        method: MethodDescriptor,
        path: http::uri::PathAndQuery,
    },
    Http {
        url: http::Uri,
        client: Box<HttpClient>,
    },
}

type HttpClient = Hyper<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// One capability's upstream.
pub struct Upstream {
    capability: &'static str,
    settings: Settings,
    transport: Transport,
    permits: Semaphore,
}

/// Why one attempt did not give an answer.
struct Fault {
    message: String,
    retry: bool,
}

impl Fault {
    fn fatal(message: impl Into<String>) -> Self {
        Fault {
            message: message.into(),
            retry: false,
        }
    }
    fn transient(message: impl Into<String>) -> Self {
        Fault {
            message: message.into(),
            retry: true,
        }
    }
}

/// `ExpandGraph` for `expand-graph`.
fn upper_camel(name: &str) -> String {
    name.split('-')
        .map(|part| {
            let mut c = part.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// The gRPC method for `capability` (`sources.expand-graph` →
/// `ctxpack.stores.v1.Sources/ExpandGraph`).
pub fn method_of(capability: &str) -> Result<MethodDescriptor, UpstreamError> {
    let (interface, function) = capability
        .split_once('.')
        .ok_or_else(|| UpstreamError::NotACapability(capability.to_owned()))?;
    let service = format!("ctxpack.stores.v1.{}", upper_camel(interface));
    protojson::pool()?
        .get_service_by_name(&service)
        .and_then(|s| s.methods().find(|m| m.name() == upper_camel(function)))
        .ok_or_else(|| UpstreamError::NoMethod(capability.to_owned()))
}

impl Upstream {
    /// The upstream of `capability`. Nothing is connected yet: a store
    /// that is down at start degrades the assemblies that need it, then
    /// answers once it is up.
    pub fn new(capability: &'static str, settings: Settings) -> Result<Self, UpstreamError> {
        let transport = match &settings.address {
            Address::Grpc(uri) => {
                let method = method_of(capability)?;
                let path = format!("/{}/{}", method.parent_service().full_name(), method.name())
                    .parse()
                    .map_err(UpstreamError::Path)?;
                let mut endpoint = tonic::transport::Endpoint::from_shared(uri.clone())
                    .map_err(|source| UpstreamError::Endpoint {
                        address: uri.clone(),
                        source,
                    })?
                    .connect_timeout(settings.timeout)
                    .tcp_nodelay(true);
                if let Some(tls) = &settings.tls {
                    use tonic::transport::{Certificate, ClientTlsConfig, Identity};
                    let mut config = ClientTlsConfig::new();
                    config = match &tls.ca {
                        Some(ca) => config.ca_certificate(Certificate::from_pem(ca)),
                        None => config.with_native_roots(),
                    };
                    if let Some((cert, key)) = &tls.identity {
                        config = config.identity(Identity::from_pem(cert, key));
                    }
                    endpoint =
                        endpoint
                            .tls_config(config)
                            .map_err(|source| UpstreamError::GrpcTls {
                                address: uri.clone(),
                                source,
                            })?;
                }
                let channel = endpoint.connect_lazy();
                Transport::Grpc {
                    channel,
                    method,
                    path,
                }
            }
            Address::Http(url) => {
                let url: http::Uri = url.parse().map_err(|source| UpstreamError::Address {
                    address: url.clone(),
                    source,
                })?;
                let mut connector = HttpConnector::new();
                connector.set_nodelay(true);
                connector.set_connect_timeout(Some(settings.timeout));
                connector.enforce_http(false);
                // A plain http:// address needs no roots: the system's are
                // read only for https:// without a `ca-file`.
                let tls = match &settings.tls {
                    Some(tls) => tls.client_config()?,
                    None => Tls::plain_config()?,
                };
                let connector = hyper_rustls::HttpsConnectorBuilder::new()
                    .with_tls_config(tls)
                    .https_or_http()
                    .enable_http1()
                    .wrap_connector(connector);
                Transport::Http {
                    url,
                    client: Box::new(Hyper::builder(TokioExecutor::new()).build(connector)),
                }
            }
        };
        Ok(Upstream {
            capability,
            permits: Semaphore::new(settings.concurrency.max(1)),
            settings,
            transport,
        })
    }

    /// The upstream's settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Answers `call` for the request of `context`: the store's answer,
    /// or the call's failure saying why.
    pub async fn answer(&self, call: &Call<'static>, context: &AgentContext) -> Answer {
        let Ok(_permit) = self.permits.acquire().await else {
            return call.failed(HostError::new(self.capability, "the upstream is closed"));
        };
        let s = &self.settings;
        let mut attempt = 0;
        loop {
            let fault = match tokio::time::timeout(s.timeout, self.once(call, context)).await {
                Ok(Ok(answer)) => return answer,
                Ok(Err(fault)) => fault,
                Err(_) => {
                    Fault::transient(format!("no answer within {} ms", s.timeout.as_millis()))
                }
            };
            if !fault.retry || attempt >= s.retries {
                let tries = if attempt > 0 {
                    format!(" (after {} attempts)", attempt + 1)
                } else {
                    String::new()
                };
                return call.failed(HostError::new(
                    self.capability,
                    format!("{}{tries}", fault.message),
                ));
            }
            // Exponential, with up to half again of jitter, so replicas
            // retrying together spread out.
            let wait = s.backoff.saturating_mul(1 << attempt.min(16));
            let jitter = wait.mul_f64(fastrand::f64() / 2.0);
            tokio::time::sleep(wait + jitter).await;
            attempt += 1;
        }
    }

    async fn once(&self, call: &Call<'static>, context: &AgentContext) -> Result<Answer, Fault> {
        match &self.transport {
            Transport::Grpc {
                channel,
                method,
                path,
            } => self.grpc(channel, method, path, call, context).await,
            Transport::Http { url, client } => self.http(url, client, call, context).await,
        }
    }

    async fn grpc(
        &self,
        channel: &tonic::transport::Channel,
        method: &MethodDescriptor,
        path: &http::uri::PathAndQuery,
        call: &Call<'static>,
        context: &AgentContext,
    ) -> Result<Answer, Fault> {
        let request =
            grpc_request(method, call, context).map_err(|e| Fault::fatal(e.to_string()))?;
        let mut request = tonic::Request::new(request);
        request.set_timeout(self.settings.timeout);
        self.headers(call, |k, v| {
            if let Ok(v) = v.parse() {
                request.metadata_mut().insert(k, v);
            }
        });
        let mut grpc = tonic::client::Grpc::new(channel.clone())
            .max_decoding_message_size(self.settings.max_answer_bytes);
        grpc.ready()
            .await
            .map_err(|e| Fault::transient(format!("gRPC: {e}")))?;
        let codec = DynamicCodec(method.output());
        let reply = grpc
            .unary(request, path.clone(), codec)
            .await
            .map_err(|status| {
                use tonic::Code;
                let message = format!("{:?}: {}", status.code(), status.message());
                match status.code() {
                    // The request's own `grpc-timeout` expired (tonic
                    // cancels it client-side), or the store said so.
                    Code::Cancelled | Code::DeadlineExceeded => Fault::transient(format!(
                        "no answer within {} ms",
                        self.settings.timeout.as_millis()
                    )),
                    Code::Unavailable | Code::ResourceExhausted => Fault::transient(message),
                    _ => Fault::fatal(message),
                }
            })?
            .into_inner();
        answer_of_reply(call, &reply).map_err(|e| Fault::fatal(e.to_string()))
    }

    async fn http(
        &self,
        url: &http::Uri,
        client: &HttpClient,
        call: &Call<'static>,
        context: &AgentContext,
    ) -> Result<Answer, Fault> {
        let body = serde_json::to_vec(&serde_json::json!({"context": context, "call": call}))
            .map_err(|e| Fault::fatal(e.to_string()))?;
        let mut builder =
            http::Request::post(url.clone()).header("content-type", "application/json");
        let mut extra = Vec::new();
        self.headers(call, |k, v| extra.push((k, v)));
        for (k, v) in extra {
            builder = builder.header(k, v);
        }
        let request = builder
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| Fault::fatal(e.to_string()))?;
        let response = client
            .request(request)
            .await
            .map_err(|e| Fault::transient(format!("HTTP: {e}")))?;
        let status = response.status().as_u16();
        let most = self.settings.max_answer_bytes;
        let body = Limited::new(response.into_body(), most)
            .collect()
            .await
            .map_err(|e| {
                // An answer over the cap would be as large again: not
                // retried.
                if e.is::<http_body_util::LengthLimitError>() {
                    Fault::fatal(format!("HTTP: the answer is larger than {most} bytes"))
                } else {
                    Fault::transient(format!("HTTP: reading the answer: {e}"))
                }
            })?
            .to_bytes();
        if status != 200 {
            let message = format!("HTTP {status}: {}", prefix(&String::from_utf8_lossy(&body)));
            return Err(if matches!(status, 429 | 502 | 503 | 504) {
                Fault::transient(message)
            } else {
                Fault::fatal(message)
            });
        }
        let text =
            std::str::from_utf8(&body).map_err(|_| Fault::fatal("the answer is not UTF-8"))?;
        read_answer(call, text).map_err(|e| Fault::fatal(e.to_string()))
    }

    fn headers(&self, call: &Call<'_>, mut put: impl FnMut(&'static str, String)) {
        if let Some(token) = &self.settings.token {
            put("authorization", format!("Bearer {token}"));
        }
        if let (Some(profile), Call::Summarize { .. }) = (&self.settings.compression_profile, call)
        {
            put("x-compression-profile", profile.clone());
        }
    }
}

/// At most 200 characters of `s`, for an error message.
fn prefix(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", cut(s, ..at)),
        None => s.to_owned(),
    }
}

/// The gRPC request of `call`: its arguments, and the request's context
/// when the method takes one.
pub fn grpc_request(
    method: &MethodDescriptor,
    call: &Call<'static>,
    context: &AgentContext,
) -> Result<DynamicMessage, UpstreamError> {
    let json = serde_json::to_value(call)?;
    let mut args = match json {
        serde_json::Value::Object(o) => o
            .into_iter()
            .next()
            .and_then(|(_, args)| match args {
                serde_json::Value::Object(args) => Some(args),
                _ => None,
            })
            .unwrap_or_default(),
        _ => Default::default(),
    };
    let input = method.input();
    if input.get_field_by_name("context").is_some() {
        args.insert("context".into(), serde_json::to_value(context)?);
    }
    Ok(protojson::to_message(
        &serde_json::Value::Object(args),
        &input,
        "request",
    )?)
}

/// The answer a gRPC reply gives `call`, read and checked by the core; an
/// error names the reply's field as the `.proto` spells it.
pub fn answer_of_reply(
    call: &Call<'static>,
    reply: &DynamicMessage,
) -> Result<Answer, UpstreamError> {
    let json = protojson::from_message(reply, "reply")?;
    let answer = json
        .get("answer")
        .cloned()
        .unwrap_or(serde_json::Value::Array(Vec::new()));
    let text = serde_json::json!({ "ok": answer }).to_string();
    read_answer(call, &text).map_err(UpstreamError::Reply)
}

#[cfg(test)]
mod tests {
    use super::masked;

    #[test]
    fn a_url_is_logged_without_its_password() {
        for (url, logged) in [
            (
                "https://svc:s3cret@stores.internal:8443/retrieve",
                "https://svc:***@stores.internal:8443/retrieve",
            ),
            (
                "nats://relay:p%40ss:w@broker:4222",
                "nats://relay:***@broker:4222",
            ),
            (
                "http://user@host/path?x=a:b@c",
                "http://user@host/path?x=a:b@c",
            ),
            ("http://host:8080/a@b", "http://host:8080/a@b"),
            ("grpc-host:50051", "grpc-host:50051"),
        ] {
            assert_eq!(masked(url), logged, "{url}");
        }
    }
}
