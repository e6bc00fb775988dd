//! The service's configuration file (TOML), read at start and again on
//! `SIGHUP`.
//!
//! ```toml
//! [service]                      # read at start only
//! listen = "127.0.0.1:8080"
//! grpc = "127.0.0.1:50051"       # or "off"
//! store = "ctxpack.db"           # or postgres://…
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
//! retries = 2
//! backoff-ms = 50
//! token-file = "/run/secrets/retrieve-token"   # or token-env = "NAME"
//! index = "kb-main"              # the index it serves (IndexDegraded)
//! # https:// (gRPC over TLS, or HTTPS): the roots it is checked against
//! # (the system's when left out), and a client certificate for mTLS
//! ca-file = "ca.pem"
//! cert-file = "client.pem"
//! key-file = "client.key"
//!
//! [events]                       # read at start only
//! nats = "nats://127.0.0.1:4222" # ContextAssembled out, SourceDeleted and
//!                                # IndexDegraded in, on NATS JetStream
//! ```
//!
//! Everything but `[service]` is reloadable: on `SIGHUP` the file is read
//! again and, if it is valid, assemblies that start afterwards use it
//! while those in flight finish with the one they began with. An invalid
//! file is refused, naming the key, and the running configuration stays.

use crate::upstream::{Address, Settings as UpstreamSettings, Tls};
use ctxpack_core::Capability;
use ctxpack_core::{BuilderConfig, Section, SectionShare};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
        }
    }
}

/// An error naming the file and the key.
fn at(path: &Path, key: &str, message: impl std::fmt::Display) -> SettingsError {
    SettingsError {
        path: path.to_owned(),
        place: Place::Key(key.to_owned()),
        message: message.to_string(),
    }
}

/// Why a settings file cannot be used: the file, where in it, and what is
/// wrong. It reads `FILE: KEY: MESSAGE`, `FILE:LINE:COLUMN: MESSAGE` or
/// `FILE: MESSAGE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsError {
    /// The file.
    pub path: PathBuf,
    /// Where in it.
    pub place: Place,
    /// What is wrong.
    pub message: String,
}

/// Where in a settings file something is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// At this key (`upstreams.retrieve.timeout-ms`).
    Key(String),
    /// At this line and column, from 1 (the file is not TOML).
    At {
        /// The line.
        line: usize,
        /// The column, in characters.
        column: usize,
    },
    /// The file as a whole (it cannot be read, a certificate it names
    /// does not load).
    File,
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        match &self.place {
            Place::Key(key) => write!(f, "{path}: {key}: {}", self.message),
            Place::At { line, column } => write!(f, "{path}:{line}:{column}: {}", self.message),
            Place::File => write!(f, "{path}: {}", self.message),
        }
    }
}

impl std::error::Error for SettingsError {}

impl From<SettingsError> for String {
    fn from(e: SettingsError) -> String {
        e.to_string()
    }
}

/// An error about the file at `path` as a whole.
fn whole(path: &Path, message: impl std::fmt::Display) -> SettingsError {
    SettingsError {
        path: path.to_owned(),
        place: Place::File,
        message: message.to_string(),
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
        })
    }
}

/// The file's TOML, read into its sections; an error names the line and
/// column, or the key.
fn read_file(path: &Path, text: &str) -> Result<File, SettingsError> {
    let de = toml::Deserializer::parse(text).map_err(|e| {
        // Where: the line and column of the span's start, from 1.
        let at = e.span().map_or(0, |s| s.start.min(text.len()));
        let before = &text[..text.floor_char_boundary(at)];
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

/// `[upstreams.<name>]`: the capability it answers and how it is reached.
fn upstream(
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

/// `[events]`: a NATS address, stream names of letters, digits, `_` and
/// `-`, a batch of at least 1.
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

fn at_least_1<T: PartialOrd + From<u8> + Copy>(
    path: &Path,
    key: &str,
    v: Option<T>,
    default: T,
) -> Result<T, SettingsError> {
    match v {
        Some(v) if v < T::from(1) => Err(at(path, &format!("limits.{key}"), "must be at least 1")),
        Some(v) => Ok(v),
        None => Ok(default),
    }
}

fn listen_limits(path: &Path, l: &LimitsFile) -> Result<crate::listen::Limits, SettingsError> {
    let d = crate::listen::Limits::default();
    let ms = |key: &str, v: Option<u64>, d: std::time::Duration| {
        at_least_1(path, key, v, d.as_millis() as u64).map(std::time::Duration::from_millis)
    };
    Ok(crate::listen::Limits {
        max_connections: at_least_1(
            path,
            "max-connections",
            l.max_connections,
            d.max_connections,
        )?,
        header_timeout: ms("header-timeout-ms", l.header_timeout_ms, d.header_timeout)?,
        body_timeout: ms("body-timeout-ms", l.body_timeout_ms, d.body_timeout)?,
        shutdown: ms("shutdown-ms", l.shutdown_ms, d.shutdown)?,
        send_timeout: ms("send-timeout-ms", l.send_timeout_ms, d.send_timeout)?,
        response_bytes: at_least_1(
            path,
            "max-response-bytes",
            l.max_response_bytes,
            d.response_bytes,
        )?,
    })
}

fn request_limits(path: &Path, l: &LimitsFile) -> Result<RequestLimits, SettingsError> {
    let d = RequestLimits::default();
    let rate = match l.requests_per_second {
        Some(r) if !(r.is_finite() && r >= 0.0) => {
            return Err(at(
                path,
                "limits.requests-per-second",
                "must be 0 (no limit) or more",
            ));
        }
        Some(r) => r,
        None => d.requests_per_second,
    };
    Ok(RequestLimits {
        requests_per_second: rate,
        burst: at_least_1(path, "burst", l.burst, d.burst)?,
        instructions: at_least_1(path, "max-instructions", l.max_instructions, d.instructions)?,
        conversation_turns: at_least_1(
            path,
            "max-conversation-turns",
            l.max_conversation_turns,
            d.conversation_turns,
        )?,
        stage_summaries: at_least_1(
            path,
            "max-stage-summaries",
            l.max_stage_summaries,
            d.stage_summaries,
        )?,
        scopes: at_least_1(path, "max-scopes", l.max_scopes, d.scopes)?,
        candidates: at_least_1(path, "max-candidates", l.max_candidates, d.candidates)?,
    })
}

/// What one request may hold (`[limits]`), checked before anything runs or
/// is recorded, and each tenant's request rate.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestLimits {
    /// A tenant's sustained requests per second; 0: no limit.
    pub requests_per_second: f64,
    /// Requests a tenant may send at once above the rate.
    pub burst: u32,
    /// Most `instructions`.
    pub instructions: usize,
    /// Most `conversation` turns.
    pub conversation_turns: usize,
    /// Most `stage-summaries`.
    pub stage_summaries: usize,
    /// Most `context.scopes`.
    pub scopes: usize,
    /// Most candidates one store answer may give.
    pub candidates: usize,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits {
            requests_per_second: 200.0,
            burst: 400,
            instructions: 256,
            conversation_turns: 1000,
            stage_summaries: 256,
            scopes: 64,
            candidates: 1000,
        }
    }
}

impl RequestLimits {
    /// Refuses a request holding more than the limits allow, naming the
    /// field.
    pub fn check(&self, r: &ctxpack_core::AssembleRequest) -> Result<(), String> {
        let over = |field: &str, n: usize, most: usize| {
            if n > most {
                Err(format!(
                    "request.{field}: {n} given, at most {most} (limits)"
                ))
            } else {
                Ok(())
            }
        };
        over("instructions", r.instructions.len(), self.instructions)?;
        over(
            "conversation",
            r.conversation.len(),
            self.conversation_turns,
        )?;
        over(
            "stage-summaries",
            r.stage_summaries.len(),
            self.stage_summaries,
        )?;
        over("context.scopes", r.context.scopes.len(), self.scopes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Settings, String> {
        Ok(Settings::parse(Path::new("ctxpack.toml"), text)?)
    }

    #[test]
    fn the_fence_key_is_read_from_its_file_and_never_shown() {
        let dir = std::env::temp_dir().join(format!("ctxpack-fence-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("ctxpack.toml");
        std::fs::write(dir.join("key"), "a secret of thirty-two bytes ...\n").unwrap();
        std::fs::write(dir.join("short"), "too short\n").unwrap();
        let toml = "[context]\nfence-key-file = \"key\"\n";
        let s = Settings::parse(&file, toml).unwrap();
        assert_eq!(
            s.builder.fence_key.as_deref(),
            Some("a secret of thirty-two bytes ...")
        );
        assert!(!format!("{:?}", s.builder).contains("thirty-two"));
        let e = Settings::parse(&file, "[context]\nfence-key-file = \"short\"\n").unwrap_err();
        // Typed: the key named, the length given, never the secret.
        assert_eq!(e.place, Place::Key("context.fence-key-file".into()));
        assert!(e.message.contains("9 bytes"), "{e}");
        let e = e.to_string();
        assert!(!e.contains("too short"), "{e}");
        let e = Settings::parse(&file, "[context]\nfence-key-file = \"none\"\n").unwrap_err();
        assert!(e.to_string().contains("context.fence-key-file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_seeds_options_and_an_upstream_are_read() {
        let s = parse(
            r#"
            [context]
            default-budget-tokens = 12000
            compression-profile = "code-fast"
            [context.section-budgets]
            relevant-knowledge = 0.5
            current-task = 0.2
            [builder]
            profile = { full = { retrieve-limit = 4, graph-depth = 1, memory-limit = 2, repository-state = true } }
            [upstreams.retrieve]
            grpc = "http://127.0.0.1:7001"
            timeout-ms = 250
            [upstreams.review]
            http = "http://127.0.0.1:7002/policy"
            retries = 0
            "#,
        )
        .unwrap();
        assert_eq!(s.builder.plan.default_budget, 12000);
        assert_eq!(s.builder.plan.shares.len(), 2);
        assert_eq!(s.compression_profile.as_deref(), Some("code-fast"));
        let r = &s.upstreams["sources.retrieve"];
        assert_eq!(r.address, Address::Grpc("http://127.0.0.1:7001".into()));
        assert_eq!(r.timeout, Duration::from_millis(250));
        assert_eq!((r.concurrency, r.retries), (64, 2));
        assert_eq!(s.upstreams["policy.review"].retries, 0);
        assert!(matches!(s.builder.profile, ctxpack_core::Profile::Full(_)));
        // Nothing given: the seed's defaults, retrieval from the index.
        let d = parse("").unwrap();
        assert_eq!(d, Settings::default());
        assert_eq!(d.builder.plan.default_budget, 24000);
    }

    #[test]
    fn every_mistake_names_its_key() {
        for (text, want) in [
            (
                "[context]\ndefault-budget-tokens = \"lots\"",
                "ctxpack.toml: context.default-budget-tokens: invalid type: string \"lots\"",
            ),
            (
                "[context]\ndefault-budget-tokens = 0",
                "context.default-budget-tokens: must be at least 1",
            ),
            (
                "[context.section-budgets]\nrelevant-knowledge = 1.5",
                "context.section-budgets.relevant-knowledge: 1.5 is not in [0, 1]",
            ),
            (
                "[context.section-budgets]\nrelevant-knowledge = 0.6\ncurrent-task = 0.6",
                "context.section-budgets: the shares sum to 1.2, over 1",
            ),
            (
                "[context.section-budgets]\nknowledge = 0.1",
                "context.section-budgets.knowledge: not a section",
            ),
            ("[contxt]\n", "ctxpack.toml: contxt: unknown field `contxt`"),
            (
                "[upstreams.fetch]\ngrpc = \"http://a:1\"",
                "upstreams.fetch: not a capability; one of retrieve, expand-graph",
            ),
            (
                "[upstreams.retrieve]\ntimeout-ms = 5",
                "upstreams.retrieve: needs exactly one of `grpc` or `http`",
            ),
            (
                "[upstreams.retrieve]\ngrpc = \"a:1\"\nhttp = \"http://a:1\"",
                "upstreams.retrieve: needs exactly one",
            ),
            (
                "[upstreams.retrieve]\ngrpc = \"ftp://a:1\"",
                "upstreams.retrieve.grpc: `ftp://a:1`: needs http://host:port or https://host:port",
            ),
            (
                "[upstreams.retrieve]\ngrpc = \"http://a:1\"\nca-file = \"ca.pem\"",
                "upstreams.retrieve.grpc: certificates need an https:// address",
            ),
            (
                "[upstreams.retrieve]\ngrpc = \"https://a:1\"\ncert-file = \"c.pem\"",
                "upstreams.retrieve.cert-file: ",
            ),
            (
                "[upstreams.retrieve]\ngrpc = \"https://a:1\"\ncert-file = \"c.pem\"\nkey-file = \"k.pem\"",
                "upstreams.retrieve.cert-file: ",
            ),
            (
                "[upstreams.retrieve]\nhttp = \"https://a:1\"\nca-file = \"Cargo.toml\"",
                "upstreams.retrieve.ca-file: holds no certificate",
            ),
            (
                "[upstreams.retrieve]\ngrpc = \"http://a:1\"\nconcurrency = 0",
                "upstreams.retrieve.concurrency: must be at least 1",
            ),
            (
                "[upstreams.retrieve]\ngrpc = \"http://a:1\"\ntimeout-ms = -1",
                "upstreams.retrieve.timeout-ms: invalid value",
            ),
            (
                "[upstreams.retrieve]\ngrpc = \"http://a:1\"\ntoken-env = \"CTXPACK_NO_SUCH_VARIABLE\"",
                "upstreams.retrieve.token-env: `CTXPACK_NO_SUCH_VARIABLE` is not set",
            ),
            (
                "[upstreams.retrieve]\ngrpc = \"http://a:1\"\ntoken-file = \"no-such-file\"",
                "upstreams.retrieve.token-file: no-such-file",
            ),
            (
                "[limits]\nmax-connections = 0",
                "limits.max-connections: must be at least 1",
            ),
            (
                "[limits]\nheader-timeout-ms = 0",
                "limits.header-timeout-ms: must be at least 1",
            ),
            (
                "[limits]\nrequests-per-second = -1.0",
                "limits.requests-per-second: must be 0",
            ),
            (
                "[limits]\nmax-instructions = 0",
                "limits.max-instructions: must be at least 1",
            ),
            (
                "[limits]\nmax-instuctions = 9",
                "limits.max-instuctions: unknown field",
            ),
            (
                "[tls]\ncert-file = \"no.pem\"",
                "tls: missing field `key-file`",
            ),
            (
                "[tls]\ncert-file = \"no.pem\"\nkey-file = \"no.key\"",
                "ctxpack.toml: tls.cert-file: no.pem",
            ),
            ("[auth]\nissuer = 7", "auth.issuer: invalid type"),
            ("[auth]\nisuer = \"x\"", "auth.isuer: unknown field"),
            (
                "[builder]\nprofile = \"ragg\"",
                "ctxpack.toml: builder.profile: unknown variant `ragg`",
            ),
            ("[service]\nlisten = \"here\"", "service.listen: invalid"),
            ("[service\n", "ctxpack.toml:1:"),
            (
                "[context]\ndefault-budget-tokens = 5\nwhat is this",
                "ctxpack.toml:3:",
            ),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(want), "{text:?}:\n  got  {err}\n  want {want}");
        }
    }
}
