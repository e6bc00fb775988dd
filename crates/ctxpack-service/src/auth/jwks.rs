//! The issuer's keys: a JWKS document read from a file or fetched from a
//! URL, its RSA keys taken as RS256 and its P-256 keys as ES256.

use super::AuthError;
use crate::ids::echo;
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The issuer's keys, and when they were fetched (from a URL).
#[derive(Default)]
pub(super) struct Keys {
    /// By `kid` (empty: no kid), with their algorithm.
    pub(super) by_kid: BTreeMap<String, (Algorithm, Arc<DecodingKey>)>,
    /// When they were fetched, for keys from a URL.
    pub(super) fetched: Option<Instant>,
}

/// The keys of a JWKS document: RSA keys as RS256, P-256 keys as ES256.
pub(super) fn keys_of(json: &[u8], from: &str) -> Result<Keys, AuthError> {
    let set: JwkSet = serde_json::from_slice(json).map_err(|source| AuthError::NotJwks {
        from: from.to_owned(),
        source,
    })?;
    let mut keys = Keys::default();
    for (i, jwk) in set.keys.iter().enumerate() {
        let alg = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => Algorithm::RS256,
            AlgorithmParameters::EllipticCurve(ec)
                if ec.curve == jsonwebtoken::jwk::EllipticCurve::P256 =>
            {
                Algorithm::ES256
            }
            // Keys of other kinds are not ours to use (they may be for
            // other clients of the same issuer).
            _ => continue,
        };
        let key = DecodingKey::from_jwk(jwk).map_err(|source| AuthError::BadKey {
            from: from.to_owned(),
            index: i,
            source,
        })?;
        let kid = jwk.common.key_id.clone().unwrap_or_default();
        keys.by_kid.insert(kid, (alg, Arc::new(key)));
    }
    if keys.by_kid.is_empty() {
        return Err(AuthError::NoKey {
            from: from.to_owned(),
        });
    }
    Ok(keys)
}

/// Fetches a JWKS document (`https://`, or `http://` for a local issuer).
pub(super) async fn fetch(url: &str) -> Result<Keys, AuthError> {
    use http_body_util::{BodyExt, Empty, Limited};
    let uri: hyper::Uri = url.parse().map_err(|source| AuthError::BadUrl {
        url: echo(url),
        source,
    })?;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(c);
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(AuthError::Tls)?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, Empty<bytes::Bytes>>(connector);
    let fetching = |source: Box<dyn std::error::Error + Send + Sync>| AuthError::Fetch {
        url: url.to_owned(),
        source,
    };
    let answer = tokio::time::timeout(Duration::from_secs(10), client.get(uri))
        .await
        .map_err(|_| AuthError::NoAnswer {
            url: url.to_owned(),
        })?
        .map_err(|e| fetching(Box::new(e)))?;
    if !answer.status().is_success() {
        return Err(AuthError::Status {
            url: url.to_owned(),
            status: answer.status(),
        });
    }
    let body = Limited::new(answer.into_body(), 1 << 20)
        .collect()
        .await
        .map_err(fetching)?
        .to_bytes();
    let mut keys = keys_of(&body, url)?;
    keys.fetched = Some(Instant::now());
    Ok(keys)
}
