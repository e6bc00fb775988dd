//! Why the service does not start, stops on an error, or refuses a
//! reload: [`StartError`], each case reading as the message the service
//! has always given, the option or file at fault first.

use crate::auth::AuthError;
use crate::events::EventsError;
use crate::fixture::FixtureError;
use crate::listen::ListenError;
use crate::pool::PoolError;
use crate::settings::SettingsError;
use crate::snapshots::StoreError;
use crate::upstream::UpstreamError;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the service does not start ([`crate::start`]), stopped on an error
/// ([`crate::Running::wait`]), or refused a reload
/// ([`crate::service::Service::reload`]).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configuration file cannot be used.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The scenario fixture (`--fixture`) does not load.
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    /// `[auth]` cannot be used.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// `--insecure-dev-no-auth` with `[auth]` configured.
    #[error("--insecure-dev-no-auth and [auth] in {at}: choose one")]
    AuthAndNoAuth {
        /// The configuration file (or `options`).
        at: String,
    },
    /// `--insecure-dev-no-auth` with a listener off loopback.
    #[error(
        "--insecure-dev-no-auth serves loopback only, and {0} is not; \
         configure [auth] to listen there"
    )]
    NotLoopback(SocketAddr),
    /// Neither `[auth]` nor `--insecure-dev-no-auth`.
    #[error(
        "no authentication configured: give [auth] (issuer, audience, jwks-file or \
         jwks-url) in --config, or, for development on this machine, \
         --insecure-dev-no-auth"
    )]
    NoAuth,
    /// The store cannot be opened or read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `--store` given as a PostgreSQL `key=value` string (not echoed: it
    /// may hold a password).
    #[error(
        "--store: this looks like a PostgreSQL key=value connection string; \
         give it as postgres://user@host:port/db"
    )]
    KeyValueStore,
    /// The artifact store cannot be written at start.
    #[error("--artifacts {0}")]
    Artifacts(String),
    /// The cache and coordination store's URL does not parse.
    #[error("redis.url: {0}")]
    Redis(crate::coord::CoordError),
    /// A PostgreSQL store without an artifact store.
    #[error(
        "--artifacts: a PostgreSQL store needs the artifact store all its replicas share, \
         s3://bucket[/prefix] (AWS_* variables for the endpoint and credentials) or a \
         directory they all see"
    )]
    NoArtifacts,
    /// The component does not load.
    #[error("loading the component: {0}")]
    Component(ctxpack_host::WasmError),
    /// A task of the service's panicked or was cancelled.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
    /// An upstream of `[upstreams]` cannot be set up, or the profile
    /// calls a source nothing answers.
    #[error(transparent)]
    Upstreams(#[from] UpstreamError),
    /// `[builder]` makes no builder.
    #[error("builder: {0}")]
    Builder(PoolError),
    /// What the configuration file at `path` makes cannot be used.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The configuration file.
        path: PathBuf,
        /// Why not.
        source: Box<StartError>,
    },
    /// A reload without a configuration file.
    #[error("no configuration file (--config) to reload")]
    NoConfig,
    /// A listener cannot be set up, or stopped on an error.
    #[error(transparent)]
    Listen(#[from] ListenError),
    /// The broker cannot be connected to.
    #[error(transparent)]
    Events(#[from] EventsError),
}
