//! Why an upstream cannot be set up, or a call or reply cannot be
//! converted.

use crate::protojson::ProtoJsonError;
use tonic::codegen::http;

/// Why an upstream cannot be set up, or a call or reply cannot be
/// converted between the core's JSON and `stores.proto`. It reads as the
/// message the service has always given (`upstreams.retrieve: …`).
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// rustls refused its own configuration, or a client certificate.
    #[error("{0}")]
    Tls(rustls::Error),
    /// A file of certificates that is not PEM.
    #[error("not PEM certificates: {0}")]
    NotPemCertificates(rustls::pki_types::pem::Error),
    /// A file of certificates that holds none.
    #[error("holds no certificate")]
    NoCertificate,
    /// A key file that is not a PEM private key.
    #[error("not a PEM private key: {0}")]
    NotPemKey(rustls::pki_types::pem::Error),
    /// A `ca-file` certificate that cannot be a root.
    #[error("not a CA certificate: {0}")]
    NotCa(rustls::Error),
    /// A name that is not `interface.function`.
    #[error("`{0}` is not a capability")]
    NotACapability(String),
    /// A capability `stores.proto` has no method for.
    #[error("`{0}` has no method in stores.proto")]
    NoMethod(String),
    /// A message that is not what `stores.proto` says.
    #[error(transparent)]
    Proto(#[from] ProtoJsonError),
    /// A method's path that is not a URI path.
    #[error("{0}")]
    Path(http::uri::InvalidUri),
    /// An upstream's address that is not a URI.
    #[error("`{address}`: {source}")]
    Address {
        /// The address.
        address: String,
        /// Why not.
        source: http::uri::InvalidUri,
    },
    /// A gRPC upstream's address that is not an endpoint.
    #[error("`{address}`: {source}")]
    Endpoint {
        /// The address.
        address: String,
        /// Why not.
        source: tonic::transport::Error,
    },
    /// A gRPC upstream's TLS that does not load.
    #[error("`{address}`: TLS: {source}")]
    GrpcTls {
        /// The address.
        address: String,
        /// Why not.
        source: tonic::transport::Error,
    },
    /// A call or context that cannot be JSON, or JSON that is no call.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// A request that is not its method's message.
    #[error("{0}")]
    Decode(#[from] prost::DecodeError),
    /// A request's context that is not the core's.
    #[error("request.context: {0}")]
    Context(serde_json::Error),
    /// A reply the core refuses, named as the store wrote it (the core
    /// names `answer.ok[0].token-count`; the store wrote
    /// `reply.answer[0].token_count`).
    #[error("{}", reply_field(.0))]
    Reply(ctxpack_core::Error),
    /// One upstream of `[upstreams]` cannot be set up.
    #[error("upstreams.{name}: {source}")]
    Upstream {
        /// The capability's function (`retrieve`).
        name: &'static str,
        /// Why not.
        source: Box<UpstreamError>,
    },
    /// The builder's profile calls a source nothing answers.
    #[error(
        "builder.profile: `{profile}` calls `{capability}`, which nothing answers: \
         configure [upstreams.{name}] or choose a profile without it"
    )]
    Unanswered {
        /// The profile.
        profile: String,
        /// The capability (`sources.recall-memory`).
        capability: &'static str,
        /// Its function (`recall-memory`).
        name: &'static str,
    },
}

/// The core's error about a reply, in the reply's own spelling.
fn reply_field(e: &ctxpack_core::Error) -> String {
    e.to_string()
        .replace("answer.ok", "reply.answer")
        .replace('-', "_")
}
