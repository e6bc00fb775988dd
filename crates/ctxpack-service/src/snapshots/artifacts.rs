//! The artifact store: every snapshot's plan and assembled content, stored
//! once by hash in an object store — an S3-compatible bucket, or a local
//! directory, the embedded default. The database keeps only the reference
//! (`context_artifacts`, and the snapshot's `plan_ref` and `content_ref`).
//!
//! Fail-fast, as the seed says: a record's artifacts are written before
//! its row, each within [`Artifacts::timeout`]; an object store that does
//! not take them fails the assembly (`store-unavailable`) and nothing is
//! acknowledged without its content. An object written whose row then
//! failed is harmless: the next record of the same text writes the same
//! object.

use super::engine::StoreError;
use ctxpack_core::text::cut;
use futures_util::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// Where the objects go under the store's root: `sha256/ab/abcd…`.
const ROOT: &str = "sha256";

/// The object store holding plans and contents by hash.
#[derive(Clone)]
pub struct Artifacts {
    objects: Arc<dyn ObjectStore>,
    /// What it is, for logs (no credentials: they come from the
    /// environment).
    described: String,
    timeout: Duration,
}

impl std::fmt::Debug for Artifacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.described)
    }
}

fn failed(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Artifacts(format!("{what}: {e}"))
}

impl Artifacts {
    /// The artifact store `spec` names: `s3://bucket[/prefix][?key=value&…]`
    /// (credentials from the usual `AWS_*` variables; the endpoint and
    /// region too, or from the query's `endpoint`, `region`, `allow_http`,
    /// `skip_signature` and `virtual_hosted_style_request`, for an
    /// S3-compatible server),
    /// `memory:` (gone with the process, for tests), or a directory, made
    /// when missing if `create` (a command that only reads makes none).
    pub fn open(spec: &str, create: bool) -> Result<Self, StoreError> {
        let timeout = Duration::from_secs(5);
        if let Some(rest) = spec.strip_prefix("s3://") {
            let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(failed("--artifacts", "s3:// names no bucket"));
            }
            // The S3 client's TLS runs on ring, as the rest of the service
            // does; the process's default provider must be set before its
            // client is built (an Err says one already is).
            let _ = rustls::crypto::ring::default_provider().install_default();
            // Fail-fast: one retry, all of it within the timeout.
            let retry = object_store::RetryConfig {
                max_retries: 1,
                retry_timeout: timeout,
                backoff: object_store::BackoffConfig {
                    init_backoff: Duration::from_millis(50),
                    max_backoff: Duration::from_millis(500),
                    base: 2.0,
                },
            };
            // The timeouts are set key by key: a whole `ClientOptions`
            // would replace what the environment set (`AWS_ALLOW_HTTP`).
            use object_store::ClientConfigKey as Client;
            use object_store::aws::AmazonS3ConfigKey as Key;
            let mut builder = object_store::aws::AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .with_retry(retry)
                .with_config(
                    Key::Client(Client::Timeout),
                    format!("{}s", timeout.as_secs()),
                )
                .with_config(Key::Client(Client::ConnectTimeout), "2s");
            for pair in query.split('&').filter(|p| !p.is_empty()) {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                builder = match key {
                    "endpoint" => builder.with_endpoint(value),
                    "region" => builder.with_region(value),
                    "allow_http" => builder.with_allow_http(value == "true"),
                    "skip_signature" => builder.with_skip_signature(value == "true"),
                    "virtual_hosted_style_request" => {
                        builder.with_virtual_hosted_style_request(value == "true")
                    }
                    // Credentials are not taken here: the spec is logged.
                    other => {
                        return Err(failed(
                            "--artifacts",
                            format!(
                                "{other:?} is not one of endpoint, region, allow_http, skip_signature, \
                                 virtual_hosted_style_request (credentials come from AWS_*)"
                            ),
                        ));
                    }
                };
            }
            let s3 = builder.build().map_err(|e| failed("--artifacts", e))?;
            let objects: Arc<dyn ObjectStore> = match prefix.trim_matches('/') {
                "" => Arc::new(s3),
                p => Arc::new(object_store::prefix::PrefixStore::new(s3, p)),
            };
            return Ok(Artifacts {
                objects,
                described: spec.to_owned(),
                timeout,
            });
        }
        if spec == "memory:" {
            return Ok(Artifacts::memory());
        }
        let dir = std::path::Path::new(spec.strip_prefix("file://").unwrap_or(spec));
        if !dir.is_dir() && !create {
            return Err(failed(
                &format!("--artifacts {spec}"),
                "no such directory (it is made by `serve`, not by a command that only reads)",
            ));
        }
        std::fs::create_dir_all(dir).map_err(|e| failed(&format!("--artifacts {spec}"), e))?;
        let local = object_store::local::LocalFileSystem::new_with_prefix(dir)
            .map_err(|e| failed(&format!("--artifacts {spec}"), e))?;
        Ok(Artifacts {
            objects: Arc::new(local),
            described: dir.display().to_string(),
            timeout,
        })
    }

    /// An artifact store in memory, gone with the process (for tests and
    /// the in-memory store).
    pub fn memory() -> Self {
        Artifacts {
            objects: Arc::new(object_store::memory::InMemory::new()),
            described: "memory:".into(),
            timeout: Duration::from_secs(5),
        }
    }

    /// What the store is, for logs.
    pub fn described(&self) -> &str {
        &self.described
    }

    /// How long one write or read may take before it fails.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The object of `hash`; `None` for a string that is not a SHA-256
    /// in lowercase hex (nothing of the caller's reaches a path).
    fn path(hash: &str) -> Option<Path> {
        let hex = hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        hex.then(|| Path::from_iter([ROOT, cut(hash, ..2), hash]))
    }

    /// Runs `op` within the timeout; `what` names it in the error.
    async fn timed<T>(
        &self,
        what: &str,
        op: impl std::future::Future<Output = object_store::Result<T>>,
    ) -> Result<object_store::Result<T>, StoreError> {
        tokio::time::timeout(self.timeout, op).await.map_err(|_| {
            failed(
                what,
                format!(
                    "{} did not answer within {:?}",
                    self.described, self.timeout
                ),
            )
        })
    }

    /// Stores `body` under `hash`, its SHA-256 (hex).
    pub async fn put(&self, hash: &str, body: &str) -> Result<(), StoreError> {
        let path =
            Self::path(hash).ok_or_else(|| failed("put", format!("{hash:?} is not a SHA-256")))?;
        let payload = PutPayload::from(bytes::Bytes::copy_from_slice(body.as_bytes()));
        self.timed("put", self.objects.put(&path, payload))
            .await?
            .map(|_| ())
            .map_err(|e| failed("put", e))
    }

    /// The body stored under `hash`, if there is one.
    pub async fn get(&self, hash: &str) -> Result<Option<String>, StoreError> {
        let Some(path) = Self::path(hash) else {
            return Ok(None);
        };
        let got = match self.timed("get", self.objects.get(&path)).await? {
            Ok(got) => got,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(failed("get", e)),
        };
        let bytes = self
            .timed("get", got.bytes())
            .await?
            .map_err(|e| failed("get", e))?;
        // Without a copy where the bytes are not shared: an answer held
        // for a slow client is its size once, not twice.
        String::from_utf8(Vec::from(bytes))
            .map(Some)
            .map_err(|_| failed("get", format!("{hash}: not UTF-8")))
    }

    /// The size in bytes of the body stored under `hash`, if there is one.
    pub async fn size(&self, hash: &str) -> Result<Option<u64>, StoreError> {
        let Some(path) = Self::path(hash) else {
            return Ok(None);
        };
        match self.timed("head", self.objects.head(&path)).await? {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(failed("head", e)),
        }
    }

    /// Writes and reads back one small object outside the hashes' tree
    /// (`probe/readiness`): what a record needs of the store — reached,
    /// the credentials taken, the bucket writable.
    pub async fn probe(&self) -> Result<(), StoreError> {
        let path = Path::from_iter(["probe", "readiness"]);
        let body = bytes::Bytes::from_static(b"ctxpack");
        self.timed("probe", self.objects.put(&path, PutPayload::from(body)))
            .await?
            .map_err(|e| failed("probe", e))?;
        let got = self
            .timed("probe", self.objects.head(&path))
            .await?
            .map_err(|e| failed("probe", e))?;
        if got.size != 7 {
            return Err(failed(
                "probe",
                "the object read back is not the one written",
            ));
        }
        Ok(())
    }

    /// Every hash stored (for the census), listed without a timeout.
    pub async fn hashes(&self) -> Result<HashSet<String>, StoreError> {
        let mut found = HashSet::new();
        let mut listing = self.objects.list(Some(&Path::from(ROOT)));
        while let Some(meta) = listing.next().await {
            let meta = meta.map_err(|e| failed("list", e))?;
            if let Some(name) = meta.location.filename()
                && Self::path(name).is_some()
            {
                found.insert(name.to_owned());
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_body_is_stored_once_by_its_hash_and_nothing_else_makes_a_path() {
        let dir = std::env::temp_dir().join(format!("ctxpack-artifacts-{}", std::process::id()));
        assert!(Artifacts::open(dir.to_str().unwrap(), false).is_err());
        let a = Artifacts::open(dir.to_str().unwrap(), true).unwrap();
        let hash = ctxpack_core::text_hash("hello");
        a.put(&hash, "hello").await.unwrap();
        a.put(&hash, "hello").await.unwrap();
        assert_eq!(a.get(&hash).await.unwrap().as_deref(), Some("hello"));
        assert_eq!(a.size(&hash).await.unwrap(), Some(5));
        assert!(dir.join("sha256").join(&hash[..2]).join(&hash).is_file());
        assert_eq!(a.hashes().await.unwrap(), HashSet::from([hash.clone()]));
        let other = ctxpack_core::text_hash("other");
        assert_eq!(a.get(&other).await.unwrap(), None);
        assert_eq!(a.size(&other).await.unwrap(), None);
        for bad in ["../../etc/passwd", "", &hash.to_uppercase(), &hash[..63]] {
            assert_eq!(a.get(bad).await.unwrap(), None, "{bad}");
            assert!(a.put(bad, "x").await.is_err(), "{bad}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
