//! `[upstreams.<name>]`: the capability each answers, its address, TLS,
//! token and limits.

use super::error::{SettingsError, at};
use super::{ContextFile, UpstreamFile};
use crate::upstream::{Address, Settings as UpstreamSettings, Tls};
use ctxpack_core::Capability;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `[upstreams.<name>]`: the capability it answers and how it is reached.
pub(super) fn upstream(
    path: &Path,
    name: &str,
    u: &UpstreamFile,
    c: &ContextFile,
) -> Result<(&'static str, UpstreamSettings), SettingsError> {
    let key = format!("upstreams.{name}");
    let found = Capability::ALL.into_iter().find(|c| c.function() == name);
    let Some(capability) = found.map(Capability::name) else {
        let names: Vec<_> = Capability::ALL.map(Capability::function).into();
        return Err(at(
            path,
            &key,
            format!("not a capability; one of {}", names.join(", ")),
        ));
    };
    let address = match (&u.grpc, &u.http) {
        (Some(g), None) => Address::Grpc(g.clone()),
        (None, Some(h)) => Address::Http(h.clone()),
        _ => return Err(at(path, &key, "needs exactly one of `grpc` or `http`")),
    };
    let tls = upstream_tls(path, &key, u, &address)?;
    if u.timeout_ms == 0 {
        return Err(at(path, &format!("{key}.timeout-ms"), "must be at least 1"));
    }
    if u.max_answer_bytes == 0 {
        return Err(at(
            path,
            &format!("{key}.max-answer-bytes"),
            "must be at least 1",
        ));
    }
    if u.concurrency == 0 {
        return Err(at(
            path,
            &format!("{key}.concurrency"),
            "must be at least 1",
        ));
    }
    let settings = UpstreamSettings {
        address,
        timeout: Duration::from_millis(u.timeout_ms),
        concurrency: u.concurrency,
        retries: u.retries,
        max_answer_bytes: u.max_answer_bytes,
        backoff: Duration::from_millis(u.backoff_ms),
        token: upstream_token(path, &key, u)?,
        compression_profile: c.compression_profile.clone(),
        index: u.index.clone(),
        tls,
    };
    Ok((capability, settings))
}

/// An upstream's TLS: for an `https://` address, the CA and the client's
/// identity it names (files relative to the settings file); none
/// otherwise, where certificates are refused.
fn upstream_tls(
    path: &Path,
    key: &str,
    u: &UpstreamFile,
    address: &Address,
) -> Result<Option<Tls>, SettingsError> {
    let (Address::Grpc(url) | Address::Http(url)) = address;
    let field = if u.grpc.is_some() { "grpc" } else { "http" };
    let secure = match url.parse::<tonic::codegen::http::Uri>() {
        Ok(uri) if uri.host().is_some() && matches!(uri.scheme_str(), Some("http" | "https")) => {
            uri.scheme_str() == Some("https")
        }
        Ok(_) => {
            return Err(at(
                path,
                &format!("{key}.{field}"),
                format!("`{url}`: needs http://host:port or https://host:port"),
            ));
        }
        Err(e) => return Err(at(path, &format!("{key}.{field}"), format!("`{url}`: {e}"))),
    };
    if !secure {
        if u.ca_file.is_some() || u.cert_file.is_some() || u.key_file.is_some() {
            return Err(at(
                path,
                &format!("{key}.{field}"),
                "certificates need an https:// address",
            ));
        }
        return Ok(None);
    }
    let read = |name: &str, file: &Option<PathBuf>| -> Result<Option<Vec<u8>>, SettingsError> {
        let Some(file) = file else { return Ok(None) };
        let file = path.parent().unwrap_or(Path::new(".")).join(file);
        std::fs::read(&file).map(Some).map_err(|e| {
            at(
                path,
                &format!("{key}.{name}"),
                format!("{}: {e}", file.display()),
            )
        })
    };
    let identity = match (
        read("cert-file", &u.cert_file)?,
        read("key-file", &u.key_file)?,
    ) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => return Err(at(path, key, "give `cert-file` and `key-file` together")),
    };
    let tls = Tls {
        ca: read("ca-file", &u.ca_file)?,
        identity,
    };
    tls.check()
        .map_err(|(name, e)| at(path, &format!("{key}.{name}"), e))?;
    Ok(Some(tls))
}

/// An upstream's bearer token, from `token-file` or `token-env`:
/// printable ASCII without spaces.
fn upstream_token(
    path: &Path,
    key: &str,
    u: &UpstreamFile,
) -> Result<Option<String>, SettingsError> {
    let token = match (&u.token_file, &u.token_env) {
        (Some(_), Some(_)) => {
            return Err(at(path, key, "give `token-file` or `token-env`, not both"));
        }
        (Some(file), None) => {
            let file = path.parent().unwrap_or(Path::new(".")).join(file);
            let t = std::fs::read_to_string(&file).map_err(|e| {
                at(
                    path,
                    &format!("{key}.token-file"),
                    format!("{}: {e}", file.display()),
                )
            })?;
            Some(t.trim().to_owned())
        }
        (None, Some(var)) => Some(std::env::var(var).map_err(|_| {
            at(
                path,
                &format!("{key}.token-env"),
                format!("`{var}` is not set"),
            )
        })?),
        (None, None) => None,
    };
    if let Some(t) = &token
        && (t.is_empty() || !t.chars().all(|c| c.is_ascii_graphic()))
    {
        return Err(at(
            path,
            key,
            "the token must be printable ASCII without spaces",
        ));
    }
    Ok(token)
}
