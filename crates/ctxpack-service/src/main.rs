//! `ctxpack serve`, `ctxpack ingest` and `ctxpack census`.

use ctxpack_service::settings::{Settings, SettingsError};
use ctxpack_service::snapshots::StoreError;
use ctxpack_service::{Options, Rig, StartError, open_store, start_rigged};
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "\
usage:
  ctxpack serve [options]
      --config FILE          configuration (TOML): [service], the seed's [context]
                             options, [builder], [upstreams.CAPABILITY]; read again
                             on SIGHUP. Flags override its [service].
      --listen ADDR          HTTP address (127.0.0.1:8080)
      --grpc ADDR|off        gRPC address (127.0.0.1:50051)
      --store PATH|URL       SQLite file (ctxpack.db) or postgres://user@host:port/db
      --artifacts DIR|URL    where plans and contents are stored by hash: s3://bucket[/prefix]
                             (AWS_ENDPOINT, AWS_ACCESS_KEY_ID, ... from the environment) or
                             a directory; left out, DIR beside the SQLite file
                             (ctxpack.db.artifacts); needed with postgres://
      --redis URL            the cache and coordination store (the file's [redis]):
                             rate limits shared by replicas, graph neighbourhoods
                             cached until GraphFactsUpdated
      --nats URL             relay ContextAssembled to NATS JetStream and read the
                             seed's inbound events there (the file's [events])
      --instances N          component instances, most assemblies at once (2 per core)
      --deadline-ms N        most time per assembly (10000)
      --max-body-bytes N     largest request body or gRPC message (4194304)
      --max-memory-mb N      most linear memory per instance (1024)
      --metrics-listen ADDR  serve /metrics, /healthz and /readyz here, open (on the
                             main listener /metrics needs factory.metrics.read)
      --init-store           make a new store where the store file is empty or holds
                             no ctxpack store (otherwise refused)
      --insecure-dev-no-auth no authentication: the tenant is the x-tenant-id header;
                             loopback addresses only; for development
    authentication, TLS and limits are the file's [auth], [tls] and [limits]
    for tests:
      --fixture DIR          the scenario files' host answers answer every
                             capability no upstream does (tests/scenarios)
      --fail CAPABILITY=P    with --fixture: the capability (sources.retrieve,
                             policy.review, ...) fails with probability P
      --source-delay-ms N    with --fixture: every source call answers N ms late
      --slow-commit-ms N     every store write is held N ms before it commits
  ctxpack openapi
      prints the HTTP API's OpenAPI 3.1 document (served at /openapi.json too;
      crates/ctxpack-service/openapi.json in the repository)
  ctxpack ingest [--store PATH|URL [--artifacts DIR|URL] | --config FILE] PATH...
      indexes text and Markdown files (a directory: its .md, .markdown, .txt and
      .text files) into the store's document index, which `serve` retrieves from
      when no retrieval upstream is configured
  ctxpack census --store PATH|URL [--artifacts DIR|URL] [--acks FILE]
                 [--nats URL [--stream NAME]]
      counts snapshots and events, finds each snapshot's plan and content in the
      artifact store, and runs the integrity check; with a file of
      acknowledged snapshot ids (one per line), checks each has exactly one
      snapshot row and one event; with --nats, reads the whole stream
      (CONTEXT_ASSEMBLY) and checks each event was published and is on it
      exactly once.
";

/// Why a command did not run, or failed: each reads as the message the
/// command has always printed after `ctxpack: `.
#[derive(Debug, thiserror::Error)]
enum CliError {
    /// No command, or one not known: the usage.
    #[error("{USAGE}")]
    Usage,
    /// A flag without its value.
    #[error("{0}: needs a value")]
    NeedsValue(String),
    /// A flag whose value does not parse (quoted).
    #[error("{flag}: {value:?} is not a number")]
    NotANumber {
        /// The flag.
        flag: String,
        /// Its value.
        value: String,
    },
    /// A flag the command does not take, with the usage.
    #[error("unknown option {0:?}\n\n{USAGE}")]
    UnknownOption(String),
    /// A command line that is wrong as a whole (`--instances: at least 1`).
    #[error("{0}")]
    Invalid(String),
    /// The configuration file cannot be used.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// `[service]`'s value of `key` does not parse.
    #[error("{path}: service.{key}: {value:?}: {source}")]
    Service {
        /// The configuration file.
        path: String,
        /// The key.
        key: &'static str,
        /// Its value.
        value: String,
        /// Why not.
        source: std::net::AddrParseError,
    },
    /// The service did not start, or stopped on an error.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A path to ingest cannot be read.
    #[error(transparent)]
    Files(#[from] ctxpack_service::index::FilesError),
    /// A file to ingest or `--acks` cannot be read.
    #[error("{what}: {source}{after}")]
    Read {
        /// The file, as the message names it.
        what: String,
        /// Why not.
        source: std::io::Error,
        /// What follows (` (text files only)`).
        after: &'static str,
    },
    /// The broker's stream cannot be read.
    #[error(transparent)]
    Events(#[from] ctxpack_service::events::EventsError),
    /// The census found a store or stream that is not as it should be.
    #[error("census failed")]
    Census,
}

fn value<'a>(args: &'a [String], i: &mut usize, flag: &str) -> Result<&'a str, CliError> {
    *i += 1;
    args.get(*i)
        .map(String::as_str)
        .ok_or_else(|| CliError::NeedsValue(flag.to_owned()))
}

fn number<T: std::str::FromStr>(s: &str, flag: &str) -> Result<T, CliError> {
    s.parse().map_err(|_| CliError::NotANumber {
        flag: flag.to_owned(),
        value: s.to_owned(),
    })
}

/// The value of `flag` in `args`, if given.
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// The options of `ctxpack serve`: the file's `[service]` first, then the
/// flags; and the rig the load script's flags set up.
fn serve_options(args: &[String]) -> Result<(Options, Rig), CliError> {
    let mut o = Options::default();
    let mut rig = Rig::default();
    if let Some(path) = flag_value(args, "--config") {
        service_section(&mut o, path)?;
    }
    let mut i = 0;
    while i < args.len() {
        serve_flag(&mut o, &mut rig, args, &mut i)?;
        i += 1;
    }
    if o.instances == 0 {
        return Err(CliError::Invalid("--instances: at least 1".into()));
    }
    if rig.fixture.is_none() && (!rig.faults.fail.is_empty() || rig.faults.delay.is_some()) {
        return Err(CliError::Invalid(
            "--fail and --source-delay-ms inject faults into --fixture".into(),
        ));
    }
    Ok((o, rig))
}

/// The flag at `args[i]` onto `o` or `rig`, its value taken (`i` moved
/// past it).
fn serve_flag(
    o: &mut Options,
    rig: &mut Rig,
    args: &[String],
    i: &mut usize,
) -> Result<(), CliError> {
    let flag = args[*i].as_str();
    match flag {
        "--listen" => {
            o.http = number(value(args, i, flag)?, flag)?;
        }
        "--grpc" => {
            let v = value(args, i, flag)?;
            o.grpc = if v == "off" {
                None
            } else {
                Some(number(v, flag)?)
            };
        }
        "--store" => o.store = value(args, i, flag)?.to_owned(),
        "--artifacts" => o.artifacts = Some(value(args, i, flag)?.to_owned()),
        "--redis" => o.redis = Some(value(args, i, flag)?.to_owned()),
        "--nats" => {
            let url = value(args, i, flag)?;
            let mut events = o
                .events
                .take()
                .unwrap_or_else(|| ctxpack_service::settings::Events::at(url));
            events.nats = url.to_owned();
            o.events = Some(events);
        }
        "--fixture" => rig.fixture = Some(value(args, i, flag)?.into()),
        "--metrics-listen" => o.metrics_listen = Some(number(value(args, i, flag)?, flag)?),
        "--init-store" => o.init_store = true,
        "--insecure-dev-no-auth" => o.no_auth = true,
        "--config" => {
            value(args, i, flag)?;
        }
        "--instances" => o.instances = number(value(args, i, flag)?, flag)?,
        "--deadline-ms" => o.deadline = Duration::from_millis(number(value(args, i, flag)?, flag)?),
        "--max-body-bytes" => o.max_body = number(value(args, i, flag)?, flag)?,
        "--max-memory-mb" => o.max_memory = number::<usize>(value(args, i, flag)?, flag)? << 20,
        "--fail" => {
            let v = value(args, i, flag)?;
            let (cap, p) = v
                .split_once('=')
                .ok_or_else(|| CliError::Invalid(format!("{flag}: {v:?} is not CAPABILITY=P")))?;
            let p: f64 = number(p, flag)?;
            if !(0.0..=1.0).contains(&p) {
                return Err(CliError::Invalid(format!(
                    "{flag}: {p} is not a probability"
                )));
            }
            rig.faults.fail.insert(cap.to_owned(), p);
        }
        "--source-delay-ms" => {
            rig.faults.delay = Some(Duration::from_millis(number(value(args, i, flag)?, flag)?))
        }
        "--slow-commit-ms" => {
            rig.slow_commit = Some(Duration::from_millis(number(value(args, i, flag)?, flag)?))
        }
        other => return Err(CliError::UnknownOption(other.to_owned())),
    }
    Ok(())
}

/// The file's `[service]` onto `o` (the flags override it).
fn service_section(o: &mut Options, path: &str) -> Result<(), CliError> {
    let s = Settings::read(path.as_ref())?.service;
    if let Some(v) = s.listen {
        o.http = v;
    }
    if let Some(v) = &s.grpc {
        o.grpc = if v == "off" {
            None
        } else {
            Some(v.parse().map_err(|source| CliError::Service {
                path: path.to_owned(),
                key: "grpc",
                value: v.clone(),
                source,
            })?)
        };
    }
    if let Some(v) = s.store {
        o.store = v;
    }
    if let Some(v) = s.artifacts {
        o.artifacts = Some(v);
    }
    if let Some(v) = s.instances {
        o.instances = v;
    }
    if let Some(v) = s.deadline_ms {
        o.deadline = Duration::from_millis(v);
    }
    if let Some(v) = s.max_body_bytes {
        o.max_body = v;
    }
    if let Some(v) = s.max_memory_mb {
        o.max_memory = v << 20;
    }
    o.config = Some(path.into());
    o.events = Settings::read(path.as_ref())?.events;
    Ok(())
}

async fn serve(args: &[String]) -> Result<(), CliError> {
    let (options, rig) = serve_options(args)?;
    let running = start_rigged(options, rig).await?;
    let stop = running.stopper();
    reload_on_hangup(running.service.clone());
    tokio::spawn(async move {
        let why = signal().await;
        tracing::info!(target: "ctxpack::serve", signal = why, "shutting down: finishing requests in flight");
        let _ = stop.send(true);
    });
    running.wait().await?;
    tracing::info!(target: "ctxpack::serve", "stopped");
    Ok(())
}

/// Reloads the configuration on every `SIGHUP`.
#[cfg(unix)]
fn reload_on_hangup(service: std::sync::Arc<ctxpack_service::service::Service>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangup) = signal(SignalKind::hangup()) else {
        tracing::warn!(target: "ctxpack::serve", "SIGHUP cannot be caught: no reload");
        return;
    };
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            if let Err(e) = service.reload().await {
                tracing::error!(target: "ctxpack::serve", error = %e, "reload refused: the configuration in use stays");
            }
        }
    });
}

#[cfg(not(unix))]
fn reload_on_hangup(_: std::sync::Arc<ctxpack_service::service::Service>) {}

#[cfg(unix)]
async fn signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = tokio::signal::ctrl_c() => "SIGINT",
        },
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}

#[cfg(not(unix))]
async fn signal() -> &'static str {
    let _ = tokio::signal::ctrl_c().await;
    "ctrl-c"
}

async fn ingest(args: &[String]) -> Result<(), CliError> {
    let mut store = None;
    let mut artifacts = None;
    let mut paths = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        match flag {
            "--store" => store = Some(value(args, &mut i, flag)?.to_owned()),
            "--artifacts" => artifacts = Some(value(args, &mut i, flag)?.to_owned()),
            "--config" => {
                let path = value(args, &mut i, flag)?;
                let s = Settings::read(path.as_ref())?;
                store = store.or(s.service.store);
                artifacts = artifacts.or(s.service.artifacts);
            }
            other if other.starts_with("--") => {
                return Err(CliError::UnknownOption(other.to_owned()));
            }
            path => paths.push(std::path::PathBuf::from(path)),
        }
        i += 1;
    }
    if paths.is_empty() {
        return Err(CliError::Invalid(format!(
            "ingest: no PATH given\n\n{USAGE}"
        )));
    }
    let spec = store.unwrap_or_else(|| Options::default().store);
    let store = open_store(&spec, artifacts.as_deref(), 2, None, false).await?;
    let files = ctxpack_service::index::files(&paths)?;
    let (mut written, mut unchanged, mut chunks) = (0, 0, 0);
    for file in &files {
        let text = std::fs::read_to_string(file).map_err(|source| CliError::Read {
            what: file.display().to_string(),
            source,
            after: " (text files only)",
        })?;
        let name = file.to_string_lossy().replace('\\', "/");
        match store.ingest(&name, &text).await? {
            ctxpack_service::index::Ingested::Written(n) => {
                written += 1;
                chunks += n;
                println!("{name}: {n} chunks");
            }
            ctxpack_service::index::Ingested::Unchanged => {
                unchanged += 1;
                println!("{name}: unchanged");
            }
        }
    }
    let (documents, indexed) = store.indexed().await?;
    println!(
        "ingested {written} files ({chunks} chunks), {unchanged} unchanged; the index holds {documents} files, {indexed} chunks"
    );
    Ok(())
}

async fn census(args: &[String]) -> Result<(), CliError> {
    let mut store = None;
    let mut artifacts = None;
    let mut acks = None;
    let mut nats = None;
    let mut stream = "CONTEXT_ASSEMBLY".to_owned();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        match flag {
            "--store" => store = Some(value(args, &mut i, flag)?.to_owned()),
            "--artifacts" => artifacts = Some(value(args, &mut i, flag)?.to_owned()),
            "--acks" => acks = Some(value(args, &mut i, flag)?.to_owned()),
            "--nats" => nats = Some(value(args, &mut i, flag)?.to_owned()),
            "--stream" => stream = value(args, &mut i, flag)?.to_owned(),
            other => return Err(CliError::UnknownOption(other.to_owned())),
        }
        i += 1;
    }
    let store = store.ok_or_else(|| CliError::Invalid("--store: required".into()))?;
    let store = ctxpack_service::open_store_to_read(&store, artifacts.as_deref()).await?;
    let c = store.census().await?;
    println!(
        "snapshots {}  events {}  snapshots without exactly one event {}  \
         snapshots without their plan or content in {} {}  integrity {}",
        c.snapshots,
        c.events,
        c.unmatched,
        store.artifacts().described(),
        c.without_content,
        c.integrity
    );
    let mut bad = c.unmatched > 0 || c.without_content > 0 || c.integrity != "ok";
    let published = match &nats {
        Some(url) => {
            let (ids, stream_bad) = census_stream(&store, url, &stream).await?;
            bad |= stream_bad;
            Some(ids)
        }
        None => None,
    };
    if let Some(path) = acks {
        bad |= census_acks(&store, &path, published.as_ref()).await?;
    }
    if bad {
        return Err(CliError::Census);
    }
    Ok(())
}

/// Each message id on the stream and how many messages carry it, after
/// printing what the stream holds; and whether that is wrong (an id
/// repeated or not its payload's, an event not yet published).
async fn census_stream(
    store: &ctxpack_service::snapshots::Store,
    url: &str,
    stream: &str,
) -> Result<(std::collections::BTreeMap<String, u32>, bool), CliError> {
    let unpublished = store.unpublished().await?;
    let s = ctxpack_service::events::stream_census(url, stream).await?;
    let repeated = s.ids.values().filter(|n| **n > 1).count();
    println!(
        "stream {stream}: messages {}  distinct ids {}  repeated ids {repeated}  \
         ids not their payload's {}  events not yet published {unpublished}",
        s.messages,
        s.ids.len(),
        s.mismatched
    );
    let bad = repeated > 0 || s.mismatched > 0 || unpublished > 0;
    Ok((s.ids, bad))
}

/// Checks that each snapshot id in the file at `path` has one row and one
/// event (and one message on the stream, when `published` is read),
/// printing those that do not; answers whether any does not.
async fn census_acks(
    store: &ctxpack_service::snapshots::Store,
    path: &str,
    published: Option<&std::collections::BTreeMap<String, u32>>,
) -> Result<bool, CliError> {
    let text = std::fs::read_to_string(path).map_err(|source| CliError::Read {
        what: format!("--acks {path}"),
        source,
        after: "",
    })?;
    let ids: std::collections::BTreeSet<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut missing = 0;
    for id in &ids {
        let (rows, events) = store.events_of(id).await?;
        let on_stream = published.map(|p| p.get(*id).copied().unwrap_or(0));
        if (rows, events) != (1, 1) || on_stream.is_some_and(|n| n != 1) {
            missing += 1;
            eprintln!("{id}: {rows} snapshot rows, {events} events, on the stream {on_stream:?}");
        }
    }
    let what = if published.is_some() {
        "one row, one event and one message on the stream"
    } else {
        "one row and one event"
    };
    println!(
        "acknowledged {}  each with {what}: {}",
        ids.len(),
        ids.len() - missing
    );
    Ok(missing > 0)
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CTXPACK_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("info,tokio_postgres=warn,async_nats=warn")
            }),
        )
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ctxpack: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match args.first().map(String::as_str) {
            Some("serve") => serve(&args[1..]).await,
            Some("census") => census(&args[1..]).await,
            Some("ingest") => ingest(&args[1..]).await,
            Some("openapi") => {
                print!("{}", ctxpack_service::openapi::text());
                Ok(())
            }
            Some("-h" | "--help" | "help") => {
                print!("{USAGE}");
                Ok(())
            }
            _ => Err(CliError::Usage),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ctxpack: {e}");
            ExitCode::FAILURE
        }
    }
}
