//! Why `[auth]` cannot be used, or the issuer's keys cannot be read.

use std::path::PathBuf;

/// Why `[auth]` cannot be used, or the issuer's keys cannot be read. It
/// reads as the message the service has always given, the file and the
/// key first (`ctxpack.toml: auth.issuer: required`).
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// A key `[auth]` needs is missing or empty.
    #[error("{at}: auth.{key}: required")]
    Required {
        /// The configuration file (or `options`).
        at: String,
        /// The key.
        key: &'static str,
    },
    /// A file `[auth]` names cannot be read.
    #[error("{at}: auth.{key}: {}: {source}", path.display())]
    Read {
        /// The configuration file (or `options`).
        at: String,
        /// The key naming the file.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// The HS256 secret is too short.
    #[error("{at}: auth.hs256-secret-file: at least 32 bytes of secret")]
    ShortSecret {
        /// The configuration file (or `options`).
        at: String,
    },
    /// Both `jwks-file` and `jwks-url` are given.
    #[error("{at}: auth: jwks-file and jwks-url: give one, not both")]
    BothKeySources {
        /// The configuration file (or `options`).
        at: String,
    },
    /// Neither `jwks-file` nor `jwks-url` is given (nor an HS256 secret).
    #[error("{at}: auth: jwks-file or jwks-url: required (the issuer's keys)")]
    NoKeySource {
        /// The configuration file (or `options`).
        at: String,
    },
    /// `jwks-url` cannot be fetched.
    #[error("{at}: auth.jwks-url: {source}")]
    JwksUrl {
        /// The configuration file (or `options`).
        at: String,
        /// Why not.
        source: Box<AuthError>,
    },
    /// A document that is not a JWKS.
    #[error("{from}: not a JWKS document: {source}")]
    NotJwks {
        /// Where it came from.
        from: String,
        /// Why not.
        source: serde_json::Error,
    },
    /// A key of the JWKS that does not load.
    #[error("{from}: keys[{index}]: {source}")]
    BadKey {
        /// Where it came from.
        from: String,
        /// The key's place in `keys`.
        index: usize,
        /// Why not.
        source: jsonwebtoken::errors::Error,
    },
    /// A JWKS without a key the service verifies with.
    #[error("{from}: holds no RSA or P-256 key")]
    NoKey {
        /// Where it came from.
        from: String,
    },
    /// `jwks-url` is not a URI (echoed quoted).
    #[error("{url}: {source}")]
    BadUrl {
        /// The URL, as [`crate::ids::echo`] quotes it.
        url: String,
        /// Why not.
        source: hyper::http::uri::InvalidUri,
    },
    /// rustls refused its own configuration.
    #[error("{0}")]
    Tls(rustls::Error),
    /// The issuer did not answer in time.
    #[error("{url}: no answer in 10 s")]
    NoAnswer {
        /// The URL.
        url: String,
    },
    /// The issuer could not be reached, or its answer read.
    #[error("{url}: {source}")]
    Fetch {
        /// The URL.
        url: String,
        /// Why not.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The issuer answered other than 2xx.
    #[error("{url}: answered {status}")]
    Status {
        /// The URL.
        url: String,
        /// Its answer.
        status: hyper::StatusCode,
    },
}
