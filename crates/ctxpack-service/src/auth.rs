//! Who is calling, and what they may do.
//!
//! Every `/factory` request and every gRPC call carries an OAuth2
//! client-credentials access token, `authorization: Bearer <JWT>`, checked
//! against the keys of a JWKS (`[auth] jwks-file` or `jwks-url`; RS256 or
//! ES256; HS256 only with `hs256-secret-file`, for development), with its
//! issuer, audience and expiry. The caller's tenant is the token's
//! `tenant-claim` (`tenant_id`): a request reads and writes only that
//! tenant's rows. An `x-tenant-id` header, if sent, must say the same.
//!
//! What a caller may do is the union of its token's scopes (`scope`, space
//! separated, or `scp`) and what its roles (`roles`) grant:
//!
//! | role           | `factory.runs.read` | `factory.context.assemble` | `factory.sources.delete` | `factory.metrics.read` |
//! |----------------|:---:|:---:|:---:|:---:|
//! | Requester      | ✓ | ✓ |   |   |
//! | Reviewer       | ✓ |   |   |   |
//! | Operator       | ✓ |   |   | ✓ |
//! | WorkspaceAdmin | ✓ | ✓ | ✓ |   |
//! | PlatformAdmin  | ✓ | ✓ | ✓ | ✓ |
//! | Observer       |   |   |   | ✓ |
//!
//! `factory.runs.read` lists and reads snapshots and their content;
//! `factory.context.assemble` assembles (HTTP `POST …/context`, gRPC
//! `Assemble`); `factory.sources.delete` marks a source deleted;
//! `factory.metrics.read` reads `/metrics` on the main listener: a
//! tenant's series alone, every tenant's for the `PlatformAdmin` role (the
//! metrics listener, `--metrics-listen`, asks for nothing and shows all).
//!
//! The data scopes a request names (`context.scopes`) are bounded by the
//! token: each must be listed in its `data-scopes-claim` claim
//! (`data_scopes`: a list of strings, or one string, space separated); a
//! token without it may name none.
//!
//! `--insecure-dev-no-auth` turns all of this off: the tenant is the
//! `x-tenant-id` header, and the service listens on loopback only.
//!
//! The issuer's keys are read in `jwks`; why `[auth]` cannot be used is
//! an [`AuthError`] (`error`).

mod error;
mod jwks;

pub use error::AuthError;

use crate::ids::{echo, id_error};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use jwks::{Keys, fetch, keys_of};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a caller may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// List and read snapshots and their content.
    RunsRead,
    /// Assemble.
    Assemble,
    /// Mark a source deleted.
    SourcesDelete,
    /// Read `/metrics` on the main listener.
    MetricsRead,
}

impl Scope {
    /// Every scope.
    pub const ALL: [Scope; 4] = [
        Scope::RunsRead,
        Scope::Assemble,
        Scope::SourcesDelete,
        Scope::MetricsRead,
    ];

    /// Its name in a token.
    pub fn name(self) -> &'static str {
        match self {
            Scope::RunsRead => "factory.runs.read",
            Scope::Assemble => "factory.context.assemble",
            Scope::SourcesDelete => "factory.sources.delete",
            Scope::MetricsRead => "factory.metrics.read",
        }
    }

    fn named(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// The seed's roles and the scopes each grants (the table above).
pub const ROLES: [(&str, &[Scope]); 6] = [
    ("Requester", &[Scope::RunsRead, Scope::Assemble]),
    ("Reviewer", &[Scope::RunsRead]),
    ("Operator", &[Scope::RunsRead, Scope::MetricsRead]),
    (
        "WorkspaceAdmin",
        &[Scope::RunsRead, Scope::Assemble, Scope::SourcesDelete],
    ),
    ("PlatformAdmin", &Scope::ALL),
    ("Observer", &[Scope::MetricsRead]),
];

/// `[auth]` in the configuration file.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AuthFile {
    /// The `iss` every token must carry.
    pub issuer: Option<String>,
    /// The `aud` every token must carry (one of).
    pub audience: Option<String>,
    /// The issuer's keys, a JWKS document on disk.
    pub jwks_file: Option<PathBuf>,
    /// The issuer's keys, fetched at start and again (at most every 5 s)
    /// when a token names a key it does not hold.
    pub jwks_url: Option<String>,
    /// A shared secret for HS256 tokens: development only.
    pub hs256_secret_file: Option<PathBuf>,
    /// The claim that names the caller's tenant.
    pub tenant_claim: Option<String>,
    /// Clock skew allowed on `exp` and `nbf`, seconds (30).
    pub leeway_s: Option<u64>,
    /// The claim that lists the data scopes a caller may name in a
    /// request's `context.scopes` (`data_scopes`).
    pub data_scopes_claim: Option<String>,
}

/// Why a caller is refused.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// No valid token: 401.
    #[error("{0}")]
    Unauthenticated(String),
    /// A valid token that may not do this: 403.
    #[error("{0}")]
    Forbidden(String),
    /// The request itself is malformed (a header sent twice): 400.
    #[error("{0}")]
    Invalid(String),
}

/// A caller whose token was verified (or, without authentication, the
/// tenant its header names).
#[derive(Clone, Debug)]
pub struct Caller {
    /// The tenant it acts for.
    pub tenant: String,
    /// The token's subject (`sub`), or `anonymous`.
    pub subject: String,
    scopes: Vec<Scope>,
    /// The data scopes it may name in a request's `context.scopes`, and
    /// the claim that listed them; none without authentication, where any
    /// may be named.
    data_scopes: Option<(Vec<String>, String)>,
    /// Whether it acts for the platform (the `PlatformAdmin` role, or no
    /// authentication): it sees every tenant's metrics.
    pub platform: bool,
}

impl Caller {
    /// Refuses the call unless the caller holds `scope`.
    pub fn may(&self, scope: Scope) -> Result<(), Refusal> {
        if self.scopes.contains(&scope) {
            Ok(())
        } else {
            Err(Refusal::Forbidden(format!(
                "authorization: the token does not grant {} (by its scope or a role)",
                scope.name()
            )))
        }
    }

    /// Refuses a request whose `context.scopes` name a data scope the
    /// token does not list: what a store answers within a scope is read
    /// only by callers the issuer let read it.
    pub fn may_read(&self, requested: &[String]) -> Result<(), Refusal> {
        let Some((granted, claim)) = &self.data_scopes else {
            return Ok(());
        };
        match requested
            .iter()
            .enumerate()
            .find(|(_, s)| !granted.contains(s))
        {
            None => Ok(()),
            Some((i, s)) => Err(Refusal::Forbidden(format!(
                "request.context.scopes[{i}]: {} is not among the token's data scopes ({claim} claim)",
                echo(s)
            ))),
        }
    }
}

/// How callers are checked.
pub enum Auth {
    /// Not at all (`--insecure-dev-no-auth`).
    Off,
    /// Bearer JWTs.
    Jwt(Box<Verifier>),
}

/// Checks bearer tokens.
pub struct Verifier {
    issuer: String,
    audience: String,
    tenant_claim: String,
    data_scopes_claim: String,
    leeway: u64,
    keys: Mutex<Keys>,
    url: Option<String>,
    hs256: Option<DecodingKey>,
}

impl Verifier {
    /// Reads `[auth]`'s `jwks-file` again (on `SIGHUP`), so a rotated key
    /// is taken without a restart: how many keys it now holds, or none
    /// where the keys come from elsewhere. A file that cannot be read or is
    /// no JWKS leaves the keys as they were and is the error.
    pub fn reload_keys(&self, file: &AuthFile, at: &str) -> Result<Option<usize>, AuthError> {
        let Some(path) = &file.jwks_file else {
            return Ok(None);
        };
        let bytes = std::fs::read(path).map_err(|source| AuthError::Read {
            at: at.to_owned(),
            key: "jwks-file",
            path: path.clone(),
            source,
        })?;
        let keys = keys_of(&bytes, &format!("{at}: auth.jwks-file"))?;
        let n = keys.by_kid.len();
        match self.keys.lock() {
            Ok(mut held) => *held = keys,
            Err(poisoned) => *poisoned.into_inner() = keys,
        }
        Ok(Some(n))
    }
}

/// The least time between two fetches of a JWKS URL.
pub const REFETCH: Duration = Duration::from_secs(5);

/// The claims read; the rest are ignored.
#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<Vec<String>>,
    #[serde(default)]
    roles: Option<Vec<String>>,
    #[serde(flatten)]
    rest: BTreeMap<String, serde_json::Value>,
}

impl Verifier {
    /// The verifier `[auth]` configures; `base` is the directory its
    /// relative paths are under.
    pub async fn new(file: &AuthFile, at: &str) -> Result<Verifier, AuthError> {
        let need = |v: &Option<String>, key: &'static str| {
            v.clone()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| AuthError::Required {
                    at: at.to_owned(),
                    key,
                })
        };
        let read = |key: &'static str, path: &PathBuf| {
            std::fs::read(path).map_err(|source| AuthError::Read {
                at: at.to_owned(),
                key,
                path: path.clone(),
                source,
            })
        };
        let issuer = need(&file.issuer, "issuer")?;
        let audience = need(&file.audience, "audience")?;
        let hs256 = match &file.hs256_secret_file {
            Some(p) => {
                let secret = read("hs256-secret-file", p)?;
                let secret = secret.trim_ascii();
                if secret.len() < 32 {
                    return Err(AuthError::ShortSecret { at: at.to_owned() });
                }
                Some(DecodingKey::from_secret(secret))
            }
            None => None,
        };
        let keys = match (&file.jwks_file, &file.jwks_url) {
            (Some(_), Some(_)) => {
                return Err(AuthError::BothKeySources { at: at.to_owned() });
            }
            (Some(p), None) => {
                let bytes = read("jwks-file", p)?;
                keys_of(&bytes, &format!("{at}: auth.jwks-file"))?
            }
            (None, Some(url)) => fetch(url).await.map_err(|e| AuthError::JwksUrl {
                at: at.to_owned(),
                source: Box::new(e),
            })?,
            (None, None) if hs256.is_some() => Keys::default(),
            (None, None) => {
                return Err(AuthError::NoKeySource { at: at.to_owned() });
            }
        };
        let tenant_claim = file
            .tenant_claim
            .clone()
            .unwrap_or_else(|| "tenant_id".into());
        let data_scopes_claim = file
            .data_scopes_claim
            .clone()
            .unwrap_or_else(|| "data_scopes".into());
        Ok(Verifier {
            issuer,
            audience,
            tenant_claim,
            data_scopes_claim,
            leeway: file.leeway_s.unwrap_or(30),
            keys: Mutex::new(keys),
            url: file.jwks_url.clone(),
            hs256,
        })
    }

    /// Whether HS256 (development) tokens are taken.
    pub fn takes_hs256(&self) -> bool {
        self.hs256.is_some()
    }

    fn key(&self, kid: &str, alg: Algorithm) -> Option<Arc<DecodingKey>> {
        let keys = self.keys.lock().ok()?;
        match keys.by_kid.get(kid) {
            Some((a, k)) if *a == alg => Some(k.clone()),
            Some(_) => None,
            // No kid: the one key of its algorithm, if there is one.
            None if kid.is_empty() => {
                let mut of_alg = keys.by_kid.values().filter(|(a, _)| *a == alg);
                match (of_alg.next(), of_alg.next()) {
                    (Some((_, k)), None) => Some(k.clone()),
                    _ => None,
                }
            }
            None => None,
        }
    }

    /// Fetches the JWKS again, if it comes from a URL and was not fetched
    /// in the last [`REFETCH`]: a key rotated in is found at once, and
    /// tokens naming made-up kids cost the issuer one fetch per interval.
    async fn refresh(&self) {
        let Some(url) = &self.url else { return };
        let due = self
            .keys
            .lock()
            .map(|k| k.fetched.is_none_or(|t| t.elapsed() > REFETCH))
            .unwrap_or(false);
        if !due {
            return;
        }
        if let Ok(mut k) = self.keys.lock() {
            k.fetched = Some(Instant::now());
        }
        match fetch(url).await {
            Ok(fresh) => {
                if let Ok(mut k) = self.keys.lock() {
                    k.by_kid = fresh.by_kid;
                }
            }
            Err(e) => {
                tracing::warn!(target: "ctxpack::auth", error = %e, "the JWKS could not be fetched again")
            }
        }
    }

    /// The caller a bearer token says, if it verifies.
    pub async fn verify(&self, token: &str) -> Result<Caller, Refusal> {
        let bad = |m: String| Refusal::Unauthenticated(format!("authorization: {m}"));
        strict(token).map_err(bad)?;
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| bad(format!("not a JWT ({e})")))?;
        let kid = header.kid.clone().unwrap_or_default();
        let key = match header.alg {
            Algorithm::HS256 => self
                .hs256
                .clone()
                .map(Arc::new)
                .ok_or_else(|| bad("HS256 tokens are not taken (development only)".into()))?,
            Algorithm::RS256 | Algorithm::ES256 => match self.key(&kid, header.alg) {
                Some(k) => k,
                None => {
                    self.refresh().await;
                    self.key(&kid, header.alg).ok_or_else(|| {
                        bad(format!(
                            "no {:?} key with kid {} among the issuer's keys",
                            header.alg,
                            echo(&kid)
                        ))
                    })?
                }
            },
            other => return Err(bad(format!("{other:?} tokens are not taken"))),
        };
        let mut v = Validation::new(header.alg);
        v.set_issuer(&[&self.issuer]);
        v.set_audience(&[&self.audience]);
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        v.leeway = self.leeway;
        v.validate_nbf = true;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &v).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            bad(match e.kind() {
                K::ExpiredSignature => "the token has expired (exp)".into(),
                K::ImmatureSignature => "the token is not valid yet (nbf)".into(),
                K::InvalidIssuer => "the token's issuer (iss) is not this service's".into(),
                K::InvalidAudience => "the token's audience (aud) is not this service".into(),
                K::InvalidSignature => "the token's signature does not verify".into(),
                K::MissingRequiredClaim(c) => format!("the token has no {c} claim"),
                _ => format!("the token does not verify ({e})"),
            })
        })?;
        let c = data.claims;
        let tenant = match c.rest.get(&self.tenant_claim) {
            Some(serde_json::Value::String(t)) => t.clone(),
            _ => {
                return Err(Refusal::Forbidden(format!(
                    "authorization: the token names no tenant ({} claim)",
                    self.tenant_claim
                )));
            }
        };
        if let Some(e) = id_error(&format!("the token's {}", self.tenant_claim), &tenant) {
            return Err(Refusal::Forbidden(format!("authorization: {e}")));
        }
        let mut scopes = Vec::new();
        let named = c
            .scope
            .iter()
            .flat_map(|s| s.split_ascii_whitespace())
            .chain(c.scp.iter().flatten().map(String::as_str));
        scopes.extend(named.filter_map(Scope::named));
        for role in c.roles.iter().flatten() {
            if let Some((_, grants)) = ROLES.iter().find(|(r, _)| r == role) {
                scopes.extend_from_slice(grants);
            }
        }
        scopes.sort();
        scopes.dedup();
        // The data scopes: a list of strings, or one string of them
        // space separated; none without the claim.
        let claim = &self.data_scopes_claim;
        let data_scopes = match c.rest.get(claim) {
            None => Vec::new(),
            Some(serde_json::Value::String(s)) => {
                s.split_ascii_whitespace().map(str::to_owned).collect()
            }
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    bad(format!(
                        "the token's {claim} claim holds a value that is not a string"
                    ))
                })?,
            Some(_) => {
                return Err(bad(format!(
                    "the token's {claim} claim is neither a list of strings nor a string"
                )));
            }
        };
        Ok(Caller {
            tenant,
            subject: c.sub.unwrap_or_else(|| "anonymous".into()),
            scopes,
            data_scopes: Some((data_scopes, claim.clone())),
            platform: c.roles.iter().flatten().any(|r| r == "PlatformAdmin"),
        })
    }
}

/// What jsonwebtoken lets pass and RFC 7515 and 7519 do not: a header
/// naming critical extensions (`crit`), which this service understands
/// none of, and a header parameter or a claim named twice (a parser
/// would take one of them, and another parser the other).
fn strict(token: &str) -> Result<(), String> {
    use base64::Engine as _;
    let mut segments = token.split('.');
    for what in ["header", "claims"] {
        let Some(json) = segments.next().and_then(|s| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(s)
                .ok()
        }) else {
            // Left to jsonwebtoken, which says what is wrong.
            return Ok(());
        };
        if let Some(name) = twice(&json) {
            let said = if what == "header" {
                "header parameter"
            } else {
                "claim"
            };
            return Err(format!("the token names the {said} {} twice", echo(&name)));
        }
        let crit = what == "header"
            && serde_json::from_slice::<serde_json::Value>(&json)
                .is_ok_and(|h| h.get("crit").is_some());
        if crit {
            return Err("the token's header has critical extensions (crit), which this service does not understand".into());
        }
    }
    Ok(())
}

/// The first key a JSON object's text names twice, at its top level.
fn twice(json: &[u8]) -> Option<String> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
            let mut seen = std::collections::HashSet::new();
            let mut first = None;
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                if first.is_none() && !seen.insert(key.clone()) {
                    first = Some(key);
                }
            }
            Ok(first)
        }
    }
    serde_json::Deserializer::from_slice(json)
        .deserialize_map(Keys)
        .ok()
        .flatten()
}

impl Auth {
    /// The caller of a request with these `authorization` and
    /// `x-tenant-id` values (every one sent, in order).
    pub async fn caller(
        &self,
        authorization: &[&[u8]],
        tenant_header: &[&[u8]],
    ) -> Result<Caller, Refusal> {
        let header_tenant = match tenant_header {
            [] => None,
            [one] => Some(
                std::str::from_utf8(one)
                    .ok()
                    .filter(|t| t.bytes().all(|b| (0x20..0x7f).contains(&b)))
                    .ok_or_else(|| Refusal::Invalid("x-tenant-id: not visible ASCII".into()))?,
            ),
            _ => {
                return Err(Refusal::Invalid(
                    "x-tenant-id: sent more than once; send it once".into(),
                ));
            }
        };
        if let Some(e) = header_tenant.and_then(|t| id_error("x-tenant-id", t)) {
            return Err(Refusal::Invalid(e));
        }
        match self {
            Auth::Off => {
                let tenant = header_tenant.ok_or_else(|| {
                    Refusal::Invalid(
                        "x-tenant-id: header missing; every request names its tenant".into(),
                    )
                })?;
                Ok(Caller {
                    tenant: tenant.to_owned(),
                    subject: "anonymous".into(),
                    scopes: Scope::ALL.to_vec(),
                    data_scopes: None,
                    platform: true,
                })
            }
            Auth::Jwt(v) => {
                let caller = v.verify(bearer(authorization)?).await?;
                if let Some(t) = header_tenant
                    && t != caller.tenant
                {
                    return Err(Refusal::Forbidden(format!(
                        "x-tenant-id: {} is not the token's tenant",
                        echo(t)
                    )));
                }
                Ok(caller)
            }
        }
    }
}

/// The token of the one `authorization: Bearer <token>` sent.
pub fn bearer<'a>(authorization: &[&'a [u8]]) -> Result<&'a str, Refusal> {
    match authorization {
        [] => Err(Refusal::Unauthenticated(
            "authorization: missing; send `authorization: Bearer <token>`".into(),
        )),
        [one] => std::str::from_utf8(one)
            .ok()
            .and_then(|h| {
                h.strip_prefix("Bearer ")
                    .or_else(|| h.strip_prefix("bearer "))
            })
            .map(str::trim)
            .ok_or_else(|| Refusal::Unauthenticated("authorization: not `Bearer <token>`".into())),
        _ => Err(Refusal::Invalid(
            "authorization: sent more than once; send it once".into(),
        )),
    }
}
