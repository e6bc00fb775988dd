//! `ctxpack serve`: the assembly service.
//!
//! The seed's API over HTTP ([`http`]) and gRPC ([`grpc`]), both running
//! [`service::Service::assemble`]: a pooled component instance ([`pool`])
//! driven step by step while the user's stores answer ([`answerers`]: an
//! upstream over gRPC or HTTP ([`upstream`]), or the embedded document
//! index ([`index`])), configured by a file reloaded on `SIGHUP`
//! ([`settings`]);
//! the snapshot recorded in the [`snapshots`] store (SQLite by default, PostgreSQL
//! for several replicas) with its content and its `ContextAssembled` event
//! in one transaction, and the seed's [`metrics`].

// Text is cut only by `ctxpack_core::text::cut`, which never panics.
#![cfg_attr(not(test), deny(clippy::string_slice))]
pub mod answerers;
pub mod auth;
pub mod camel;
pub mod client;
pub mod coord;
mod error;
pub mod events;
pub mod fixture;
pub mod grpc;
pub mod http;
pub mod ids;
pub mod index;
pub mod listen;
pub mod metrics;
pub mod openapi;
pub mod pages;
pub mod pool;
pub mod postgres;
pub mod protojson;
pub mod service;
pub mod settings;
pub mod snapshots;
pub mod sqlite;
pub mod trace;
pub mod upstream;
pub mod upstream_server;

pub use error::StartError;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How the service runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// HTTP address (port 0: any free port).
    pub http: SocketAddr,
    /// gRPC address, if served.
    pub grpc: Option<SocketAddr>,
    /// `postgres://…`, or a SQLite file path (optionally `sqlite:PATH`).
    pub store: String,
    /// Where the store keeps plans and contents by hash: `s3://bucket`,
    /// a directory (see [`snapshots::Artifacts::open`]); left out, the
    /// directory beside a SQLite file.
    pub artifacts: Option<String>,
    /// The cache and coordination store (`--redis URL`), over the file's
    /// `[redis] url`.
    pub redis: Option<String>,
    /// The configuration file (TOML, see [`settings`]), read again on
    /// reload; the defaults when unset.
    pub config: Option<PathBuf>,
    /// Most component instances, so most assemblies running at once.
    pub instances: usize,
    /// Most time per assembly, from its request read to its outcome.
    pub deadline: Duration,
    /// Most bytes of a request body (and of a gRPC message).
    pub max_body: usize,
    /// Most linear memory per instance.
    pub max_memory: usize,
    /// The broker events are relayed to and read from (`[events]`); none:
    /// events wait in the outbox.
    pub events: Option<settings::Events>,
    /// No authentication: every listener on loopback, the tenant the
    /// `x-tenant-id` header says (`--insecure-dev-no-auth`).
    pub no_auth: bool,
    /// Authentication when no file gives it (`[auth]`; tests).
    pub auth: Option<auth::AuthFile>,
    /// TLS when no file gives it (`[tls]`; tests).
    pub tls: Option<listen::ServerTls>,
    /// Where `/metrics`, `/healthz` and `/readyz` are served open, if
    /// anywhere.
    pub metrics_listen: Option<SocketAddr>,
    /// The listener's limits when no file gives them (`[limits]`).
    pub listen_limits: Option<listen::Limits>,
    /// Each request's limits when no file gives them (`[limits]`).
    pub request_limits: Option<settings::RequestLimits>,
    /// Make a new store where the store is empty or not a ctxpack store
    /// (`--init-store`).
    pub init_store: bool,
}

/// The bundled demo's files, where this crate's sources are.
pub fn demo_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// What tests and the load script put in place of a deployment's stores
/// and disk: the scenario fixture behind every capability no upstream
/// answers, faults injected into its answers, a slow commit. A deployment
/// starts with [`start`], which has none of them; [`start_rigged`] is for
/// tests, and for `ctxpack serve --fixture` under the load script.
#[derive(Clone, Debug, Default)]
pub struct Rig {
    /// Scenario files whose hosts' answers answer every capability no
    /// upstream does (see [`fixture`]).
    pub fixture: Option<PathBuf>,
    /// Faults injected into the fixture's answers.
    pub faults: fixture::Faults,
    /// Each write transaction held this long before committing: a slow
    /// disk.
    pub slow_commit: Option<Duration>,
}

impl Rig {
    /// The scenario corpus (`tests/scenarios`) behind every capability.
    pub fn scenarios() -> Self {
        Rig {
            fixture: Some(demo_path("../../tests/scenarios")),
            ..Rig::default()
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            http: SocketAddr::from(([127, 0, 0, 1], 8080)),
            grpc: Some(SocketAddr::from(([127, 0, 0, 1], 50051))),
            store: "ctxpack.db".into(),
            artifacts: None,
            redis: None,
            config: None,
            instances: std::thread::available_parallelism().map_or(4, |n| n.get() * 2),
            deadline: Duration::from_secs(10),
            max_body: 4 << 20,
            max_memory: 1 << 30,
            events: None,
            no_auth: false,
            auth: None,
            tls: None,
            metrics_listen: None,
            listen_limits: None,
            request_limits: None,
            init_store: false,
        }
    }
}

/// A running service.
pub struct Running {
    /// Where HTTP is served.
    pub http: SocketAddr,
    /// Where gRPC is served.
    pub grpc: Option<SocketAddr>,
    /// Where the metrics listener is.
    pub metrics: Option<SocketAddr>,
    /// The shared service (its store, for tests).
    pub service: Arc<service::Service>,
    stop: watch::Sender<bool>,
    tasks: Vec<Task>,
}

impl Running {
    /// Stops taking connections, lets requests in flight finish, and
    /// returns when both servers have stopped.
    pub async fn shutdown(self) -> Result<(), StartError> {
        let _ = self.stop.send(true);
        self.wait().await
    }

    /// Returns when both servers have stopped (after [`Running::stopper`]
    /// was used).
    pub async fn wait(self) -> Result<(), StartError> {
        for t in self.tasks {
            t.await?;
        }
        Ok(())
    }

    /// A handle that stops the service.
    pub fn stopper(&self) -> watch::Sender<bool> {
        self.stop.clone()
    }
}

/// Opens the store `spec` names, its plans and contents in the artifact
/// store `artifacts` names (see [`snapshots::Artifacts::open`]). Left out,
/// a SQLite store keeps them in the directory beside its file
/// (`ctxpack.db.artifacts`); a PostgreSQL store, shared by replicas,
/// must be told where they all find them.
pub async fn open_store(
    spec: &str,
    artifacts: Option<&str>,
    connections: usize,
    slow_commit: Option<Duration>,
    init: bool,
) -> Result<snapshots::Store, StartError> {
    opened(spec, artifacts, connections, slow_commit, init, true).await
}

/// [`open_store`] for a command that only reads (`census`): an artifact
/// directory that is not there is an error, not made.
pub async fn open_store_to_read(
    spec: &str,
    artifacts: Option<&str>,
) -> Result<snapshots::Store, StartError> {
    opened(spec, artifacts, 2, None, false, false).await
}

async fn opened(
    spec: &str,
    artifacts: Option<&str>,
    connections: usize,
    slow_commit: Option<Duration>,
    init: bool,
    create: bool,
) -> Result<snapshots::Store, StartError> {
    let (engine, beside): (Arc<dyn snapshots::Engine>, Option<String>) =
        if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
            if artifacts.is_none() {
                return Err(StartError::NoArtifacts);
            }
            let pg = postgres::Postgres::connect(spec, connections, slow_commit, init).await?;
            (Arc::new(pg), None)
        } else if spec.split_whitespace().any(|w| {
            w.split_once('=')
                .is_some_and(|(k, _)| !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphabetic()))
        }) {
            // Not echoed: such a string may hold a password.
            return Err(StartError::KeyValueStore);
        } else {
            let path = PathBuf::from(spec.strip_prefix("sqlite:").unwrap_or(spec));
            let beside = format!("{}.artifacts", path.display());
            (
                Arc::new(sqlite::Sqlite::open(&path, slow_commit, init)?),
                Some(beside),
            )
        };
    let artifacts = match artifacts.or(beside.as_deref()) {
        Some(at) => snapshots::Artifacts::open(at, create)?,
        None => return Err(StartError::NoArtifacts),
    };
    Ok(snapshots::Store::open(engine, artifacts).await?)
}

/// The cache and coordination store `--redis` or the file's `[redis]`
/// names, if any. One that does not answer at start is said, and the
/// service starts without it until it does.
async fn coordination(
    o: &Options,
    settings: &settings::Settings,
) -> Result<Option<coord::Coord>, StartError> {
    let redis = match (&o.redis, &settings.redis) {
        (Some(url), Some(file)) => settings::Redis {
            url: url.clone(),
            ..file.clone()
        },
        (Some(url), None) => settings::Redis::at(url),
        (None, Some(file)) => file.clone(),
        (None, None) => return Ok(None),
    };
    let c = coord::Coord::new(
        &redis.url,
        Duration::from_millis(redis.timeout_ms),
        Duration::from_secs(redis.graph_ttl_s),
    )
    .map_err(StartError::Redis)?;
    let at = upstream::masked(&redis.url);
    match c.ping().await {
        Ok(()) => tracing::info!(
            target: "ctxpack::serve",
            redis = %at,
            graph_ttl_s = redis.graph_ttl_s,
            "rate limits shared through redis, graph neighbourhoods cached there"
        ),
        Err(e) => tracing::error!(
            target: "ctxpack::serve",
            redis = %at,
            error = %e,
            "redis does not answer: each replica keeps its own rate and no neighbourhood is cached until it does"
        ),
    }
    Ok(Some(c))
}

/// The settings in `path`, or the defaults.
fn settings_of(path: Option<&Path>) -> Result<settings::Settings, StartError> {
    match path {
        Some(path) => Ok(settings::Settings::read(path)?),
        None => Ok(settings::Settings::default()),
    }
}

/// What the service's configuration makes: its pool and its stores.
fn live(
    runtime: &Arc<ctxpack_host::Runtime>,
    settings: &settings::Settings,
    store: &snapshots::Store,
    fixture: Option<Arc<fixture::DemoSources>>,
    health: Arc<answerers::IndexHealth>,
    coord: Option<coord::Coord>,
    instances: usize,
) -> Result<service::Live, StartError> {
    let stores = answerers::Answerers::new(settings, store, fixture, health, coord)?;
    let pool = pool::Pool::new(runtime.clone(), settings.builder.clone(), instances)
        .map_err(StartError::Builder)?;
    Ok(service::Live {
        pool,
        stores: Arc::new(stores),
    })
}

impl service::Service {
    /// Reads the configuration file again and, if it is valid, puts it in
    /// use for the assemblies that start from now on; those in flight
    /// finish with the one they began with. An invalid file changes
    /// nothing and is the error.
    pub async fn reload(self: &Arc<Self>) -> Result<(), StartError> {
        let Some(reload) = &self.reload else {
            return Err(StartError::NoConfig);
        };
        let settings = settings_of(Some(&reload.path))?;
        if settings.service != reload.service {
            tracing::warn!(
                target: "ctxpack::serve",
                "[service] changed: its settings take effect at the next start"
            );
        }
        let at = reload.path.display().to_string();
        if settings.auth != reload.auth {
            // Who may call is not changed under the callers: said, loudly.
            tracing::error!(
                target: "ctxpack::serve",
                "[auth] changed: NOT applied, the [auth] the service started with stays until a restart \
                 (its jwks-file alone is read again on SIGHUP)"
            );
        } else if let (Some(file), auth::Auth::Jwt(v)) = (&settings.auth, &self.auth) {
            match v.reload_keys(file, &at) {
                Ok(Some(keys)) => {
                    tracing::info!(target: "ctxpack::serve", keys, "auth.jwks-file read again")
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(target: "ctxpack::serve", error = %e, "auth.jwks-file not read again: the keys in use stay");
                }
            }
        }
        let this = self.clone();
        let fixture = reload.fixture.clone();
        let (runtime, path, instances) = (
            reload.runtime.clone(),
            reload.path.clone(),
            reload.instances,
        );
        let next = tokio::task::spawn_blocking(move || {
            let health = this.health.clone();
            let coord = this.coord.clone();
            live(
                &runtime,
                &settings,
                &this.store,
                fixture,
                health,
                coord,
                instances,
            )
            .map(|l| (l, settings))
            .map_err(|e| in_file(&path, e))
        })
        .await??;
        let (next, settings) = next;
        tracing::info!(
            target: "ctxpack::serve",
            stores = ?next.stores.describe(),
            profile = ?settings.builder.profile,
            "configuration reloaded"
        );
        self.replace(next);
        Ok(())
    }
}

/// `e`, about what the configuration file at `path` makes.
fn in_file(path: &Path, e: StartError) -> StartError {
    StartError::InFile {
        path: path.to_owned(),
        source: Box::new(e),
    }
}

/// How callers are checked: `[auth]` (from the options or the file), or
/// nothing with `--insecure-dev-no-auth` on loopback only.
async fn authentication(
    o: &Options,
    settings: &settings::Settings,
) -> Result<auth::Auth, StartError> {
    let file = o.auth.clone().or_else(|| settings.auth.clone());
    let at = o
        .config
        .as_ref()
        .map_or_else(|| "options".to_owned(), |p| p.display().to_string());
    match (o.no_auth, file) {
        (true, Some(_)) => Err(StartError::AuthAndNoAuth { at }),
        (true, None) => {
            let addrs = [Some(o.http), o.grpc, o.metrics_listen];
            if let Some(open) = addrs.iter().flatten().find(|a| !a.ip().is_loopback()) {
                return Err(StartError::NotLoopback(*open));
            }
            tracing::warn!(
                target: "ctxpack::serve",
                "AUTHENTICATION IS OFF (--insecure-dev-no-auth): any process on this machine \
                 acts as any tenant it names in x-tenant-id; for development only"
            );
            Ok(auth::Auth::Off)
        }
        (false, Some(file)) => {
            let v = auth::Verifier::new(&file, &at).await?;
            if v.takes_hs256() {
                tracing::warn!(
                    target: "ctxpack::serve",
                    "auth.hs256-secret-file: HS256 tokens are taken; for development only"
                );
            }
            Ok(auth::Auth::Jwt(Box::new(v)))
        }
        (false, None) => Err(StartError::NoAuth),
    }
}

/// Starts the service.
pub async fn start(o: Options) -> Result<Running, StartError> {
    start_rigged(o, Rig::default()).await
}

/// Starts the service on a test `rig` (see [`Rig`]).
pub async fn start_rigged(o: Options, rig: Rig) -> Result<Running, StartError> {
    let settings = settings_of(o.config.as_deref())?;
    let fixture = match &rig.fixture {
        Some(dir) => Some(Arc::new(fixture::DemoSources::load(
            dir,
            rig.faults.clone(),
        )?)),
        None => None,
    };
    let auth = authentication(&o, &settings).await?;
    let store = open_store(
        &o.store,
        o.artifacts.as_deref(),
        o.instances * 2,
        rig.slow_commit,
        o.init_store,
    )
    .await?;
    // An artifact store the service cannot write (no credentials, no
    // bucket, not reached) would fail every assembly: said at start.
    store.artifacts().probe().await.map_err(|e| {
        StartError::Artifacts(format!(
            "{}: {e} (for s3://, are AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY set, and the bucket made?)",
            store.artifacts().described()
        ))
    })?;
    let runtime = load_runtime(o.max_memory).await?;
    let health = Arc::new(answerers::IndexHealth::default());
    health.set(store.degraded_indexes().await?);
    let coord = coordination(&o, &settings).await?;
    let first = live(
        &runtime,
        &settings,
        &store,
        fixture.clone(),
        health.clone(),
        coord.clone(),
        o.instances,
    )
    .map_err(|e| match &o.config {
        Some(p) => in_file(p, e),
        None => e,
    })?;
    let (documents, chunks) = store.indexed().await?;
    tracing::info!(
        target: "ctxpack::serve",
        store = store.engine_name(),
        artifacts = store.artifacts().described(),
        instances = o.instances,
        precompiled = runtime.from_artifact(),
        config = ?o.config,
        profile = ?settings.builder.profile,
        stores = ?first.stores.describe(),
        documents,
        chunks,
        "ready"
    );
    let limits = o
        .listen_limits
        .clone()
        .unwrap_or_else(|| settings.listen.clone());
    let service = Arc::new(service::Service {
        live: std::sync::RwLock::new(Arc::new(first)),
        health,
        store,
        metrics: Default::default(),
        deadline: o.deadline,
        reload: o.config.clone().map(|path| service::Reload {
            path,
            service: settings.service.clone(),
            runtime: runtime.clone(),
            fixture,
            instances: o.instances,
            auth: settings.auth.clone(),
        }),
        auth,
        limits: o
            .request_limits
            .clone()
            .unwrap_or_else(|| settings.requests.clone()),
        rate: service::rate::RateLimiter::shared(coord.clone()),
        coord,
        max_body: o.max_body,
        broker: Default::default(),
        ready: Default::default(),
        checked: Default::default(),
        sending: listen::SendBudget::new(limits.response_bytes),
        fair: service::fair::Fair::new(
            std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
        ),
        seats: service::fair::Fair::new(o.instances),
    });
    let (stop, _) = watch::channel(false);
    let (http, grpc, metrics, tasks) = listen_all(&o, &settings, &service, &limits, &stop).await?;
    Ok(Running {
        http,
        grpc,
        metrics,
        service,
        stop,
        tasks,
    })
}

/// Every listener the options and the settings ask for — HTTP, metrics,
/// gRPC — and the event relay; their addresses and tasks.
async fn listen_all(
    o: &Options,
    settings: &settings::Settings,
    service: &Arc<service::Service>,
    limits: &listen::Limits,
    stop: &watch::Sender<bool>,
) -> Result<Listening, StartError> {
    let tls = o.tls.clone().or_else(|| settings.tls.clone());
    let (http, mut tasks) = serve_http(o, service, limits, tls.as_ref(), stop).await?;
    let metrics = match o.metrics_listen {
        Some(addr) => Some(serve_metrics(addr, service, limits, stop, &mut tasks).await?),
        None => None,
    };
    let grpc = match o.grpc {
        Some(addr) => {
            let serving = grpc::Serving {
                service: service.clone(),
                max_body: o.max_body,
                deadline: o.deadline,
                limits: limits.clone(),
                tls: tls.clone(),
            };
            let (addr, task) = serving.listen(addr, stop).await?;
            tasks.push(joined(task));
            Some(addr)
        }
        None => None,
    };
    // The file's [events] unless the options name a broker.
    if let Some(events) = o.events.clone().or_else(|| settings.events.clone()) {
        let client = events::connect(&events.nats).await?;
        let _ = service.broker.set(client.clone());
        tracing::info!(target: "ctxpack::serve", nats = %upstream::masked(&events.nats), stream = %events.stream, "relaying events");
        let (store, health) = (service.store.clone(), service.health.clone());
        let coord = service.coord.clone();
        tasks.extend(
            events::start(client, events, store, health, coord, stop.subscribe())
                .into_iter()
                .map(joined),
        );
    }
    tracing::info!(
        target: "ctxpack::serve",
        http = %http,
        grpc = ?grpc,
        metrics = ?metrics,
        tls = tls.is_some(),
        "listening"
    );
    Ok((http, grpc, metrics, tasks))
}

/// Where HTTP, gRPC and the metrics are served, and the tasks serving
/// them.
type Listening = (
    SocketAddr,
    Option<SocketAddr>,
    Option<SocketAddr>,
    Vec<Task>,
);

/// The component, loaded once for every instance, each held to
/// `max_memory` bytes and interruptible.
async fn load_runtime(max_memory: usize) -> Result<Arc<ctxpack_host::Runtime>, StartError> {
    let limits = ctxpack_host::Limits {
        max_memory_bytes: Some(max_memory),
        interruptible: true,
        ..Default::default()
    };
    let runtime =
        tokio::task::spawn_blocking(move || ctxpack_host::Runtime::load_bundled_limited(limits))
            .await?
            .map_err(StartError::Component)?;
    let runtime = Arc::new(runtime);
    pool::start_clock(&runtime);
    Ok(runtime)
}

/// The HTTP API on `--listen`, with TLS when it is configured; its
/// address, and the task serving it.
async fn serve_http(
    o: &Options,
    service: &Arc<service::Service>,
    limits: &listen::Limits,
    tls: Option<&listen::ServerTls>,
    stop: &watch::Sender<bool>,
) -> Result<(SocketAddr, Vec<Task>), StartError> {
    let (listener, addr) = listen::bind("--listen", o.http).await?;
    let app = http::router(
        http::Http {
            service: service.clone(),
            body_timeout: limits.body_timeout,
        },
        o.max_body,
    );
    let tls = match tls {
        Some(t) => Some(Arc::new(t.config(&[b"http/1.1"])?)),
        None => None,
    };
    let task = tokio::spawn(listen::serve(
        listener,
        app,
        tls,
        limits.clone(),
        stop.subscribe(),
    ));
    Ok((addr, vec![joined(task)]))
}

/// The metrics on their own listener, `addr`; its address.
async fn serve_metrics(
    addr: SocketAddr,
    service: &Arc<service::Service>,
    limits: &listen::Limits,
    stop: &watch::Sender<bool>,
    tasks: &mut Vec<Task>,
) -> Result<SocketAddr, StartError> {
    let (listener, bound) = listen::bind("--metrics-listen", addr).await?;
    tasks.push(joined(tokio::spawn(listen::serve(
        listener,
        http::metrics_router(service.clone()),
        None,
        limits.clone(),
        stop.subscribe(),
    ))));
    Ok(bound)
}

/// A task the service runs until it stops: its outcome, awaited (dropped,
/// the task runs on).
type Task = snapshots::BoxFuture<'static, Result<(), StartError>>;

/// The outcome of `task`, which a listener or the event relay runs.
fn joined<E>(task: tokio::task::JoinHandle<Result<(), E>>) -> Task
where
    E: Into<StartError> + Send + 'static,
{
    Box::pin(async move { task.await?.map_err(Into::into) })
}
