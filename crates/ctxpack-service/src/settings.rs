//! The service's configuration file (TOML), read at start and again on
//! `SIGHUP`.
//!
//! ```toml
//! [service]                      # read at start only
//! listen = "127.0.0.1:8080"
//! grpc = "127.0.0.1:50051"       # or "off"
//! store = "ctxpack.db"           # or postgres://…
//! artifacts = "s3://bucket/ctxpack"  # plans and contents by hash; or a
//!                                # directory (beside the SQLite file when
//!                                # left out; needed with postgres://)
//! instances = 4
//! deadline-ms = 10000
//! max-body-bytes = 4194304
//! max-memory-mb = 1024
//!
//! [context]                      # the seed's Knowledge:Context options
//! default-budget-tokens = 24000  # DefaultBudgetTokens
//! compression-profile = "code-fast"  # CompressionProfile
//! fence-key-file = "/run/secrets/fence-key"  # the fences' nonce is keyed
//!                                # by its first line (16 bytes or more);
//!                                # never logged or recorded
//! [context.section-budgets]      # SectionBudgets: each section's share
//! relevant-knowledge = 0.25
//!
//! [builder]                      # the rest of the builder's configuration,
//! profile = { rag = { retrieve-limit = 8 } }   # as the core reads it
//!
//! [upstreams.retrieve]           # one table per capability it names
//! grpc = "http://127.0.0.1:7001" # or http = "http://…/ctxpack"
//! timeout-ms = 1000
//! concurrency = 64
//! retries = 2                    # not for an answer over max-answer-bytes
//! backoff-ms = 50
//! max-answer-bytes = 67108864    # the most an answer may have (64 MiB)
//! token-file = "/run/secrets/retrieve-token"   # or token-env = "NAME"
//! index = "kb-main"              # the index it serves (IndexDegraded)
//! # https:// (gRPC over TLS, or HTTPS): the roots it is checked against
//! # (the system's when left out), and a client certificate for mTLS
//! ca-file = "ca.pem"
//! cert-file = "client.pem"
//! key-file = "client.key"
//!
//! [redis]                        # read at start only; optional
//! url = "redis://127.0.0.1:6379" # rate limits shared by the replicas, and
//!                                # graph neighbourhoods cached until
//!                                # GraphFactsUpdated (see crate::coord)
//! timeout-ms = 100               # then each replica goes on without it
//! graph-ttl-s = 300              # 0: no neighbourhood cached
//!
//! [events]                       # read at start only
//! nats = "nats://127.0.0.1:4222" # ContextAssembled out, SourceDeleted and
//!                                # IndexDegraded in, on NATS JetStream
//! ```
//!
//! `[auth]`, `[tls]`, `[limits]`, `[redis]` and `[events]` are read at start only
//! too (but `[auth]`'s `jwks-file`, read again; an `[auth]` change is
//! logged as not applied). Everything but `[service]` is otherwise
//! reloadable: on `SIGHUP` the file is read
//! again and, if it is valid, assemblies that start afterwards use it
//! while those in flight finish with the one they began with. An invalid
//! file is refused, naming the key, and the running configuration stays.

mod error;
mod limits;
mod upstream;

use ctxpack_core::text::cut;
pub use error::{Place, SettingsError};
use error::{at, whole};
pub use limits::{OverLimit, RequestLimits};
use limits::{listen_limits, request_limits};
use upstream::upstream;

use crate::upstream::Settings as UpstreamSettings;
use ctxpack_core::{BuilderConfig, Section, SectionShare};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The file, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct File {
    #[serde(default)]
    service: ServiceFile,
    #[serde(default)]
    context: ContextFile,
    #[serde(default)]
    builder: Option<toml::Table>,
    #[serde(default)]
    upstreams: BTreeMap<String, UpstreamFile>,
    #[serde(default)]
    events: Option<Events>,
    #[serde(default)]
    auth: Option<crate::auth::AuthFile>,
    #[serde(default)]
    tls: Option<TlsFile>,
    #[serde(default)]
    limits: LimitsFile,
    #[serde(default)]
    redis: Option<Redis>,
}

/// `[redis]`: the cache and coordination store (see [`crate::coord`]).
/// Read at start only.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Redis {
    /// `redis://host:port/db` (`rediss://` for TLS).
    pub url: String,
    /// Most time one call to it may take before the service goes on
    /// without it (the replica's own rate, the store's own answer).
    #[serde(default = "Redis::default_timeout_ms")]
    pub timeout_ms: u64,
    /// How long a cached graph neighbourhood lives at most, in seconds;
    /// 0: none is cached (the rate is still shared).
    #[serde(default = "Redis::default_graph_ttl_s")]
    pub graph_ttl_s: u64,
}

impl Redis {
    /// The defaults, for the server at `url`.
    pub fn at(url: &str) -> Redis {
        Redis {
            url: url.to_owned(),
            timeout_ms: Redis::default_timeout_ms(),
            graph_ttl_s: Redis::default_graph_ttl_s(),
        }
    }
    fn default_timeout_ms() -> u64 {
        100
    }
    fn default_graph_ttl_s() -> u64 {
        300
    }
}

/// `[tls]`: the listener's certificate (HTTPS and gRPC over TLS). Read at
/// start only.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct TlsFile {
    cert_file: PathBuf,
    key_file: PathBuf,
}

/// `[limits]`: what one client may take. Read at start only.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct LimitsFile {
    max_connections: Option<usize>,
    max_connections_per_client: Option<usize>,
    header_timeout_ms: Option<u64>,
    body_timeout_ms: Option<u64>,
    shutdown_ms: Option<u64>,
    send_timeout_ms: Option<u64>,
    max_response_bytes: Option<usize>,
    requests_per_second: Option<f64>,
    burst: Option<u32>,
    max_instructions: Option<usize>,
    max_conversation_turns: Option<usize>,
    max_stage_summaries: Option<usize>,
    max_scopes: Option<usize>,
    max_candidates: Option<usize>,
}

/// `[events]`: the broker the outbox is relayed to and the seed's inbound
/// events are read from (see [`crate::events`]). Read at start only.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Events {
    /// The NATS server, `nats://host:port`.
    pub nats: String,
    /// The JetStream stream `ContextAssembled` is published to (made when
    /// missing, capturing the seed's subject).
    #[serde(default = "Events::default_stream")]
    pub stream: String,
    /// How long JetStream remembers a message id to drop a repeat, in
    /// seconds: the longest a relay may be down between publishing an
    /// event and marking it.
    #[serde(default = "Events::default_duplicate_window_s")]
    pub duplicate_window_s: u64,
    /// Most events claimed per round.
    #[serde(default = "Events::default_batch")]
    pub batch: u32,
    /// The stream the inbound events are kept in until a replica has
    /// handled them (made when missing, capturing the three subjects).
    #[serde(default = "Events::default_inbound_stream")]
    pub inbound_stream: String,
    /// `SourceDeleted`: `{"tenantId", "sourceId"}`.
    #[serde(default = "Events::default_source_deleted")]
    pub source_deleted: String,
    /// `IndexDegraded`: `{"indexId", "reason"}`.
    #[serde(default = "Events::default_index_degraded")]
    pub index_degraded: String,
    /// `IndexRevisionReady`: `{"indexId", "indexRevision"}`; the index has
    /// recovered.
    #[serde(default = "Events::default_index_revision_ready")]
    pub index_revision_ready: String,
    /// `GraphFactsUpdated`: `{"tenantId"}`; the tenant's cached graph
    /// neighbourhoods are not read again (with `[redis]`).
    #[serde(default = "Events::default_graph_facts_updated")]
    pub graph_facts_updated: String,
}

impl Events {
    /// The defaults, for the broker at `nats`.
    pub fn at(nats: &str) -> Events {
        Events {
            nats: nats.to_owned(),
            stream: Events::default_stream(),
            duplicate_window_s: Events::default_duplicate_window_s(),
            batch: Events::default_batch(),
            inbound_stream: Events::default_inbound_stream(),
            source_deleted: Events::default_source_deleted(),
            index_degraded: Events::default_index_degraded(),
            index_revision_ready: Events::default_index_revision_ready(),
            graph_facts_updated: Events::default_graph_facts_updated(),
        }
    }
    fn default_stream() -> String {
        "CONTEXT_ASSEMBLY".into()
    }
    fn default_duplicate_window_s() -> u64 {
        3600
    }
    fn default_batch() -> u32 {
        256
    }
    fn default_inbound_stream() -> String {
        "CONTEXT_ASSEMBLY_INBOUND".into()
    }
    fn default_source_deleted() -> String {
        "knowledge-ingestion.sources.v1.source-deleted".into()
    }
    fn default_index_degraded() -> String {
        "vector-memory.indexes.v1.index-degraded".into()
    }
    fn default_index_revision_ready() -> String {
        "vector-memory.indexes.v1.index-revision-ready".into()
    }
    fn default_graph_facts_updated() -> String {
        "vector-memory.graph.v1.graph-facts-updated".into()
    }
}

/// `[service]`: read at start only.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ServiceFile {
    /// HTTP address.
    pub listen: Option<SocketAddr>,
    /// gRPC address, or `off`.
    pub grpc: Option<String>,
    /// The store.
    pub store: Option<String>,
    /// The artifact store.
    pub artifacts: Option<String>,
    /// Component instances.
    pub instances: Option<usize>,
    /// Most time per assembly.
    pub deadline_ms: Option<u64>,
    /// Largest request body.
    pub max_body_bytes: Option<usize>,
    /// Most linear memory per instance.
    pub max_memory_mb: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct ContextFile {
    default_budget_tokens: Option<u32>,
    section_budgets: Option<BTreeMap<String, f64>>,
    compression_profile: Option<String>,
    /// A file holding the builder's fence key (its first line).
    fence_key_file: Option<PathBuf>,
    /// The tokenizer files the models ship, by the name requests count
    /// with (`{"named": NAME}`).
    #[serde(default)]
    tokenizer_files: Vec<TokenizerPath>,
}

/// `[[context.tokenizer-files]]`: a tokenizer file, read from `path`
/// (relative to the settings file) and given to the builder as `name`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct TokenizerPath {
    name: String,
    path: PathBuf,
    /// A tiktoken rank file's pattern.
    pattern: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct UpstreamFile {
    grpc: Option<String>,
    http: Option<String>,
    #[serde(default = "default_timeout_ms")]
    timeout_ms: u64,
    #[serde(default = "default_concurrency")]
    concurrency: usize,
    #[serde(default = "default_retries")]
    retries: u32,
    #[serde(default = "default_backoff_ms")]
    backoff_ms: u64,
    #[serde(default = "default_max_answer_bytes")]
    max_answer_bytes: usize,
    token_file: Option<PathBuf>,
    token_env: Option<String>,
    index: Option<String>,
    ca_file: Option<PathBuf>,
    cert_file: Option<PathBuf>,
    key_file: Option<PathBuf>,
}

fn default_timeout_ms() -> u64 {
    1000
}
fn default_concurrency() -> usize {
    64
}
fn default_retries() -> u32 {
    2
}
fn default_backoff_ms() -> u64 {
    50
}
fn default_max_answer_bytes() -> usize {
    crate::upstream::MAX_ANSWER_BYTES
}

/// What the file configures, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `[service]`.
    pub service: ServiceFile,
    /// The builder's configuration: `[builder]` with `[context]` applied.
    pub builder: BuilderConfig,
    /// The summariser's model profile (`CompressionProfile`).
    pub compression_profile: Option<String>,
    /// Each configured upstream, by capability (`sources.retrieve`).
    pub upstreams: BTreeMap<&'static str, UpstreamSettings>,
    /// `[events]`.
    pub events: Option<Events>,
    /// `[auth]`.
    pub auth: Option<crate::auth::AuthFile>,
    /// `[tls]`, its files read.
    pub tls: Option<crate::listen::ServerTls>,
    /// `[limits]` for the listener.
    pub listen: crate::listen::Limits,
    /// `[limits]` for each request.
    pub requests: RequestLimits,
    /// `[redis]`.
    pub redis: Option<Redis>,
}

/// The service's builder configuration when the file gives none:
/// retrieval from the embedded index, every other default the core's
/// (the seed's budget and section shares).
pub fn default_builder() -> BuilderConfig {
    BuilderConfig {
        profile: ctxpack_core::Profile::Rag(ctxpack_core::RagSettings { retrieve_limit: 8 }),
        ..Default::default()
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            service: ServiceFile::default(),
            builder: default_builder(),
            compression_profile: None,
            upstreams: BTreeMap::new(),
            events: None,
            auth: None,
            tls: None,
            listen: Default::default(),
            requests: Default::default(),
            redis: None,
        }
    }
}

impl Settings {
    /// Reads and checks the file at `path`.
    pub fn read(path: &Path) -> Result<Settings, SettingsError> {
        let text = std::fs::read_to_string(path).map_err(|e| whole(path, e))?;
        Settings::parse(path, &text)
    }

    /// Checks `text`, the file at `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Settings, SettingsError> {
        let file = read_file(path, text)?;
        let c = &file.context;
        let mut builder = builder(path, file.builder.as_ref())?;
        context(path, c, &mut builder)?;
        let mut upstreams = BTreeMap::new();
        for (name, u) in &file.upstreams {
            let (capability, settings) = upstream(path, name, u, c)?;
            upstreams.insert(capability, settings);
        }
        if let Some(e) = &file.events {
            events(path, e)?;
        }
        if let Some(r) = &file.redis {
            redis(path, r)?;
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        Ok(Settings {
            builder,
            compression_profile: c.compression_profile.clone(),
            upstreams,
            auth: file.auth.map(|mut a| {
                a.jwks_file = a.jwks_file.map(|f| dir.join(f));
                a.hs256_secret_file = a.hs256_secret_file.map(|f| dir.join(f));
                a
            }),
            tls: file.tls.as_ref().map(|t| server_tls(path, t)).transpose()?,
            listen: listen_limits(path, &file.limits)?,
            requests: request_limits(path, &file.limits)?,
            service: file.service,
            events: file.events,
            redis: file.redis,
        })
    }
}

/// The file's TOML, read into its sections; an error names the line and
/// column, or the key.
fn read_file(path: &Path, text: &str) -> Result<File, SettingsError> {
    let de = toml::Deserializer::parse(text).map_err(|e| {
        // Where: the line and column of the span's start, from 1.
        let at = e.span().map_or(0, |s| s.start.min(text.len()));
        let before = cut(text, ..text.floor_char_boundary(at));
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        SettingsError {
            path: path.to_owned(),
            place: Place::At { line, column },
            message: e.message().to_owned(),
        }
    })?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        let inner = e.into_inner();
        at(path, &key, inner.message())
    })
}

/// `[builder]`: the builder's configuration, or the default one.
fn builder(path: &Path, table: Option<&toml::Table>) -> Result<BuilderConfig, SettingsError> {
    let Some(table) = table else {
        return Ok(default_builder());
    };
    let json = serde_json::to_value(table).map_err(|e| at(path, "builder", e))?;
    serde_path_to_error::deserialize(json)
        .map_err(|e| at(path, &format!("builder.{}", e.path()), e.inner()))
}

/// `[context]`: the fence key, the default budget, the section shares and
/// the compression profile, onto `builder`.
fn context(path: &Path, c: &ContextFile, builder: &mut BuilderConfig) -> Result<(), SettingsError> {
    if let Some(f) = &c.fence_key_file {
        builder.fence_key = Some(fence_key(path, f)?);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    for (i, t) in c.tokenizer_files.iter().enumerate() {
        let text = std::fs::read_to_string(dir.join(&t.path)).map_err(|e| {
            at(
                path,
                &format!("context.tokenizer-files[{i}].path"),
                format!("{}: {e}", t.path.display()),
            )
        })?;
        // Read now, so a file the counting does not follow is named by
        // its key here rather than by the builder's field at start.
        if let Err(e) =
            ctxpack_core::LoadedTokenizer::from_file(text.as_bytes(), t.pattern.as_deref())
        {
            let key = format!("context.tokenizer-files[{i}]");
            let (key, message) = match e {
                // The pattern given (or missing) is named as its own key.
                ctxpack_core::Error::InvalidField { field, message }
                    if field.ends_with(".pattern") =>
                {
                    (format!("{key}.pattern"), message)
                }
                ctxpack_core::Error::InvalidField { message, .. } => (key, message),
                other => (key, other.to_string()),
            };
            return Err(at(path, &key, message));
        }
        builder.tokenizers.push(ctxpack_core::TokenizerFile {
            name: t.name.clone(),
            text,
            pattern: t.pattern.clone(),
        });
    }
    if let Some(budget) = c.default_budget_tokens {
        if budget == 0 {
            return Err(at(
                path,
                "context.default-budget-tokens",
                "must be at least 1",
            ));
        }
        builder.plan.default_budget = budget;
    }
    if let Some(shares) = &c.section_budgets {
        builder.plan.shares = section_shares(path, shares)?;
    }
    if let Some(p) = &c.compression_profile
        && (p.is_empty() || p.len() > 200 || p.chars().any(char::is_control))
    {
        return Err(at(
            path,
            "context.compression-profile",
            "must be 1 to 200 characters without control characters",
        ));
    }
    Ok(())
}

/// `context.fence-key-file`: the key on its first line (relative to the
/// file), at least 16 bytes. An error names the file and the length,
/// never the key.
fn fence_key(path: &Path, f: &Path) -> Result<String, SettingsError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let secret = std::fs::read_to_string(dir.join(f)).map_err(|e| {
        at(
            path,
            "context.fence-key-file",
            format!("{}: {e}", f.display()),
        )
    })?;
    let key = secret.lines().next().unwrap_or_default().trim();
    if key.len() < 16 {
        return Err(at(
            path,
            "context.fence-key-file",
            format!(
                "{}: the key's first line has {} bytes; give at least 16",
                f.display(),
                key.len()
            ),
        ));
    }
    Ok(key.to_owned())
}

/// `context.section-budgets`: each a section's share in [0, 1], summing
/// to at most 1.
fn section_shares(
    path: &Path,
    shares: &BTreeMap<String, f64>,
) -> Result<Vec<SectionShare>, SettingsError> {
    let mut plan = Vec::new();
    let mut sum = 0.0;
    for (name, share) in shares {
        let key = format!("context.section-budgets.{name}");
        let section: Section = serde_json::from_value(serde_json::json!(name))
            .map_err(|_| at(path, &key, "not a section"))?;
        if !(0.0..=1.0).contains(share) {
            return Err(at(path, &key, format!("{share} is not in [0, 1]")));
        }
        sum += share;
        plan.push(SectionShare {
            section,
            share: *share,
        });
    }
    if sum > 1.0 + 1e-9 {
        return Err(at(
            path,
            "context.section-budgets",
            format!("the shares sum to {sum}, over 1"),
        ));
    }
    Ok(plan)
}

/// `[events]`: a NATS address, stream names of letters, digits, `_` and
/// `-`, a batch of at least 1.
fn redis(path: &Path, r: &Redis) -> Result<(), SettingsError> {
    if !(r.url.starts_with("redis://") || r.url.starts_with("rediss://")) {
        return Err(at(
            path,
            "redis.url",
            format!(
                "`{}`: needs redis://host:port",
                crate::upstream::masked(&r.url)
            ),
        ));
    }
    if r.timeout_ms == 0 {
        return Err(at(path, "redis.timeout-ms", "must be at least 1"));
    }
    Ok(())
}

fn events(path: &Path, e: &Events) -> Result<(), SettingsError> {
    if !(e.nats.starts_with("nats://") || e.nats.starts_with("tls://")) {
        return Err(at(
            path,
            "events.nats",
            format!("`{}`: needs nats://host:port", e.nats),
        ));
    }
    for (key, v) in [("stream", &e.stream), ("inbound-stream", &e.inbound_stream)] {
        if v.is_empty()
            || !v
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(at(
                path,
                &format!("events.{key}"),
                "letters, digits, `_` and `-` only",
            ));
        }
    }
    if e.batch == 0 {
        return Err(at(path, "events.batch", "must be at least 1"));
    }
    Ok(())
}

/// `[tls]`: the server's certificate and key (relative to the file), as a
/// configuration that loads.
fn server_tls(path: &Path, t: &TlsFile) -> Result<crate::listen::ServerTls, SettingsError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let read = |key: &str, f: &Path| {
        std::fs::read(dir.join(f)).map_err(|e| at(path, key, format!("{}: {e}", f.display())))
    };
    let tls = crate::listen::ServerTls {
        cert: read("tls.cert-file", &t.cert_file)?,
        key: read("tls.key-file", &t.key_file)?,
    };
    tls.config(&[]).map_err(|e| whole(path, e))?;
    Ok(tls)
}

#[cfg(test)]
mod tests;
