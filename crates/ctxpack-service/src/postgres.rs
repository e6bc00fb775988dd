//! The PostgreSQL store engine: the same schema as SQLite's, for several
//! replicas of the service sharing one database.
//!
//! A pool of connections (deadpool); each transaction takes one. Replicas
//! starting together migrate under an advisory lock, so one applies each
//! migration and the others see it applied.

use crate::snapshots::{
    BoxFuture, Committed, Engine, PENDING, Publish, Stmt, StoreError, Value, pending_of,
};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

/// The migrations, in order: (version, SQL).
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../migrations/postgres/0001_snapshots.sql")),
    (
        2,
        include_str!("../migrations/postgres/0002_compressions.sql"),
    ),
    (3, include_str!("../migrations/postgres/0003_documents.sql")),
    (4, include_str!("../migrations/postgres/0004_relay.sql")),
    (5, include_str!("../migrations/postgres/0005_requests.sql")),
    (6, include_str!("../migrations/postgres/0006_fence.sql")),
    (7, include_str!("../migrations/postgres/0007_model.sql")),
    (
        8,
        include_str!("../migrations/postgres/0008_cache_prefixes.sql"),
    ),
    (10, include_str!("../migrations/postgres/0010_chat.sql")),
];

/// The migrations the store runs once its own work is done
/// ([`Engine::late_migration`]): (version, SQL).
const LATE: &[(i64, &str)] = &[(
    crate::snapshots::CONTENTS_MOVED,
    include_str!("../migrations/postgres/0009_artifacts.sql"),
)];

/// PostgreSQL.
pub struct Postgres {
    pool: Pool,
    slow_commit: Option<std::time::Duration>,
}

fn db(e: impl std::fmt::Display) -> StoreError {
    StoreError::Database(e.to_string())
}

/// A database error with PostgreSQL's own message (tokio-postgres's
/// Display says only "db error").
fn pg(e: tokio_postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(d) => db(format!("{}: {}", d.code().code(), d.message())),
        None => db(e),
    }
}

fn pool_err(e: deadpool_postgres::PoolError) -> StoreError {
    match e {
        deadpool_postgres::PoolError::Backend(e) => pg(e),
        other => db(other),
    }
}

impl Postgres {
    /// Connects to `url` (`postgres://user@host:port/db`) with up to
    /// `connections` connections, and applies the migrations it lacks.
    /// `slow_commit` holds each write transaction that long before it
    /// commits: a slow disk, for fault tests.
    pub async fn connect(
        url: &str,
        connections: usize,
        slow_commit: Option<std::time::Duration>,
        init: bool,
    ) -> Result<Self, StoreError> {
        let (url_for_driver, tls) =
            tls_of(url).map_err(|e| db(format!("--store {}: {e}", redact(url))))?;
        let config: tokio_postgres::Config = url_for_driver
            .parse()
            .map_err(|e| db(format!("--store {}: {e}", redact(url))))?;
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match tls {
            None => Manager::from_config(config, tokio_postgres::NoTls, manager_config),
            Some(tls) => Manager::from_config(
                config,
                tokio_postgres_rustls::MakeRustlsConnect::new(tls),
                manager_config,
            ),
        };
        let pool = Pool::builder(manager)
            .max_size(connections.max(1))
            .build()
            .map_err(db)?;
        migrate(&pool, url, init).await?;
        Ok(Postgres { pool, slow_commit })
    }
}

/// Why the URL's TLS settings cannot be used; in a store error after the
/// URL (`--store postgres://…: sslmode: …`).
#[derive(Debug, thiserror::Error)]
enum SslError {
    /// An `sslmode` libpq does not have (echoed quoted).
    #[error("sslmode: {0} is not disable, prefer, require, verify-ca or verify-full")]
    Mode(String),
    /// `sslrootcert` cannot be read.
    #[error("sslrootcert: {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why not.
        source: std::io::Error,
    },
    /// `sslrootcert` is not PEM.
    #[error("sslrootcert: {path}: {source}")]
    Pem {
        /// The file.
        path: String,
        /// Why not.
        source: rustls::pki_types::pem::Error,
    },
    /// A certificate of `sslrootcert` cannot be a root.
    #[error("sslrootcert: {path}: {source}")]
    Root {
        /// The file.
        path: String,
        /// Why not.
        source: rustls::Error,
    },
    /// rustls refused its own configuration.
    #[error("{0}")]
    Tls(rustls::Error),
    /// The roots make no verifier.
    #[error("sslrootcert: {0}")]
    Verifier(rustls::client::VerifierBuilderError),
}

/// How `sslmode` is honoured, as libpq does: `disable` (no TLS);
/// `prefer` (the default: TLS if the server offers it) and `require` (TLS
/// or no connection) encrypt without checking the server's certificate,
/// unless `sslrootcert` names the roots to check it against, as
/// `verify-ca` does (the chain; the system's roots without `sslrootcert`);
/// `verify-full` checks the chain and that the certificate names the host.
/// Answers the URL the driver reads (`verify-*` are `require` to it) and
/// the TLS configuration, none for `disable`.
fn tls_of(url: &str) -> Result<(String, Option<rustls::ClientConfig>), SslError> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut mode = "prefer".to_owned();
    let mut rootcert = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("sslmode", v)) => mode = v.to_owned(),
            Some(("sslrootcert", v)) => rootcert = Some(v.to_owned()),
            _ => rest.push(pair.to_owned()),
        }
    }
    let driver_mode = match mode.as_str() {
        "disable" | "prefer" | "require" => mode.clone(),
        "verify-ca" | "verify-full" => "require".into(),
        other => {
            return Err(SslError::Mode(crate::ids::echo(other)));
        }
    };
    rest.push(format!("sslmode={driver_mode}"));
    let url = format!("{base}?{}", rest.join("&"));
    if mode == "disable" {
        return Ok((url, None));
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let roots = match &rootcert {
        Some(path) => {
            use rustls::pki_types::pem::PemObject;
            let pem = std::fs::read(path).map_err(|source| SslError::Read {
                path: path.clone(),
                source,
            })?;
            let mut roots = rustls::RootCertStore::empty();
            for c in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
                let c = c.map_err(|source| SslError::Pem {
                    path: path.clone(),
                    source,
                })?;
                roots.add(c).map_err(|source| SslError::Root {
                    path: path.clone(),
                    source,
                })?;
            }
            Some(roots)
        }
        None if mode.starts_with("verify-") => {
            let mut roots = rustls::RootCertStore::empty();
            for c in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(c);
            }
            Some(roots)
        }
        None => None,
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(SslError::Tls)?;
    let chain = match roots {
        None => None,
        Some(roots) => Some(
            rustls::client::WebPkiServerVerifier::builder_with_provider(
                std::sync::Arc::new(roots),
                provider.clone(),
            )
            .build()
            .map_err(SslError::Verifier)?,
        ),
    };
    let verifier = std::sync::Arc::new(Verifier {
        chain,
        names: mode == "verify-full",
        provider,
    });
    let config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok((url, Some(config)))
}

/// The server's certificate as `sslmode` asks: its chain checked against
/// the roots, and its host name when `names`; without roots (`prefer`,
/// `require`) not checked, as libpq does. The handshake's signatures are
/// always checked.
#[derive(Debug)]
struct Verifier {
    chain: Option<std::sync::Arc<rustls::client::WebPkiServerVerifier>>,
    names: bool,
    provider: std::sync::Arc<rustls::crypto::CryptoProvider>,
}

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) if !self.names => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// `url` with its password, if any, as `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// A NULL of whatever type the parameter has.
#[derive(Debug)]
struct Null;

impl ToSql for Null {
    fn to_sql(
        &self,
        _: &Type,
        _: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        Ok(IsNull::Yes)
    }
    fn accepts(_: &Type) -> bool {
        true
    }
    to_sql_checked!();
}

fn bind(v: &Value) -> Box<dyn ToSql + Sync + Send> {
    match v {
        Value::Null => Box::new(Null),
        Value::Int(n) => Box::new(*n),
        Value::Real(f) => Box::new(*f),
        Value::Text(s) => Box::new(s.clone()),
        Value::Bool(b) => Box::new(*b),
    }
}

fn read(row: &tokio_postgres::Row, i: usize) -> Result<Value, StoreError> {
    let t = row.columns()[i].type_();
    let v = if *t == Type::INT8 {
        row.try_get::<_, Option<i64>>(i).map(|v| v.map(Value::Int))
    } else if *t == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)
            .map(|v| v.map(|n| Value::Int(n.into())))
    } else if *t == Type::FLOAT8 {
        row.try_get::<_, Option<f64>>(i).map(|v| v.map(Value::Real))
    } else if *t == Type::BOOL {
        row.try_get::<_, Option<bool>>(i)
            .map(|v| v.map(Value::Bool))
    } else {
        row.try_get::<_, Option<String>>(i)
            .map(|v| v.map(Value::Text))
    };
    Ok(v.map_err(pg)?.unwrap_or(Value::Null))
}

/// `params` bound, borrowed as tokio-postgres takes them.
fn bound(params: &[Value]) -> Vec<Box<dyn ToSql + Sync + Send>> {
    params.iter().map(bind).collect()
}

fn refs(bound: &[Box<dyn ToSql + Sync + Send>]) -> Vec<&(dyn ToSql + Sync)> {
    bound
        .iter()
        .map(|b| b.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

impl Engine for Postgres {
    fn transaction(&self, stmts: Vec<Stmt>) -> BoxFuture<'_, Result<Committed, StoreError>> {
        Box::pin(async move {
            let mut client = self.pool.get().await.map_err(pool_err)?;
            let tx = client.transaction().await.map_err(pg)?;
            for s in &stmts {
                let st = tx.prepare_cached(s.sql).await.map_err(pg)?;
                let values = bound(&s.params);
                let changed = tx.execute(&st, &refs(&values)).await.map_err(pg)?;
                if s.must_change && changed == 0 {
                    tx.rollback().await.map_err(pg)?;
                    return Ok(Committed::Conflict);
                }
            }
            if let Some(d) = self.slow_commit {
                tokio::time::sleep(d).await;
            }
            tx.commit().await.map_err(pg)?;
            Ok(Committed::Yes)
        })
    }

    fn query(
        &self,
        sql: &'static str,
        params: Vec<Value>,
    ) -> BoxFuture<'_, Result<Vec<Vec<Value>>, StoreError>> {
        Box::pin(async move {
            let client = self.pool.get().await.map_err(pool_err)?;
            let st = client.prepare_cached(sql).await.map_err(pg)?;
            let values = bound(&params);
            let rows = client.query(&st, &refs(&values)).await.map_err(pg)?;
            rows.iter()
                .map(|r| (0..r.len()).map(|i| read(r, i)).collect())
                .collect()
        })
    }

    fn integrity_check(&self) -> BoxFuture<'_, Result<String, StoreError>> {
        // PostgreSQL enforces the foreign keys and checks its pages as it
        // reads them; what is left to check is that every table reads
        // whole, which a full count does.
        Box::pin(async move {
            let client = self.pool.get().await.map_err(pool_err)?;
            for table in [
                "context_artifacts",
                "context_snapshots",
                "context_items",
                "context_outbox",
                "deleted_citations",
            ] {
                let sql = format!("SELECT COUNT(*) FROM {table}");
                client.query_one(&sql, &[]).await.map_err(pg)?;
            }
            Ok("ok".into())
        })
    }

    fn name(&self) -> &'static str {
        "postgres"
    }

    fn late_migration(&self, version: i64) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let (_, sql) = LATE
                .iter()
                .find(|(v, _)| *v == version)
                .ok_or_else(|| db(format!("no migration {version}")))?;
            let mut client = self.pool.get().await.map_err(pool_err)?;
            let tx = client.transaction().await.map_err(pg)?;
            // One replica migrates at a time, as at opening.
            tx.batch_execute("SELECT pg_advisory_xact_lock(7242013)")
                .await
                .map_err(pg)?;
            apply(&tx, version, sql).await?;
            tx.commit().await.map_err(pg)
        })
    }

    fn relay<'a>(
        &'a self,
        limit: i64,
        at: String,
        publish: Publish<'a>,
    ) -> BoxFuture<'a, Result<(usize, usize), StoreError>> {
        Box::pin(async move {
            let mut client = self.pool.get().await.map_err(pool_err)?;
            let tx = client.transaction().await.map_err(pg)?;
            // Locked until this transaction ends; another replica's relay
            // skips them and takes the next ones.
            let sql = format!("{PENDING} FOR UPDATE SKIP LOCKED");
            let rows = tx.query(&sql, &[&limit]).await.map_err(pg)?;
            let rows = rows
                .iter()
                .map(|r| (0..r.len()).map(|i| read(r, i)).collect())
                .collect::<Result<Vec<Vec<Value>>, _>>()?;
            let pending = pending_of(rows)?;
            let claimed = pending.len();
            if claimed == 0 {
                return Ok((0, 0));
            }
            let published = publish(pending).await;
            let marked = published.len();
            if marked > 0 {
                tx.execute(
                    "UPDATE context_outbox SET published_at = $1 WHERE event_id = ANY($2)",
                    &[&at, &published],
                )
                .await
                .map_err(pg)?;
            }
            tx.commit().await.map_err(pg)?;
            Ok((claimed, marked))
        })
    }
}

/// Brings the schema at `url` up to date, one replica at a time (an
/// advisory lock); a database that holds ctxpack's tables but no record of
/// its migrations is refused unless `init`.
async fn migrate(pool: &Pool, url: &str, init: bool) -> Result<(), StoreError> {
    let mut client = pool.get().await.map_err(pool_err)?;
    let tx = client.transaction().await.map_err(pg)?;
    // One replica migrates at a time.
    tx.batch_execute(
        "SELECT pg_advisory_xact_lock(7242013); \
         CREATE TABLE IF NOT EXISTS schema_migrations \
         (version BIGINT PRIMARY KEY, applied_at TEXT NOT NULL)",
    )
    .await
    .map_err(pg)?;
    let (ours, tables): (i64, i64) = {
        let r = tx
            .query_one(
                "SELECT (SELECT COUNT(*) FROM schema_migrations), \
                 (SELECT COUNT(*) FROM information_schema.tables \
                  WHERE table_schema = current_schema() AND table_name = 'context_snapshots')",
                &[],
            )
            .await
            .map_err(pg)?;
        (r.get(0), r.get(1))
    };
    if ours == 0 && tables > 0 && !init {
        return Err(db(format!(
            "--store {}: holds context_snapshots but no record of ctxpack's migrations; \
             point --store at the right database, or start with --init-store",
            redact(url)
        )));
    }
    for (version, sql) in MIGRATIONS {
        apply(&tx, *version, sql).await?;
    }
    tx.commit().await.map_err(pg)?;
    Ok(())
}

/// Runs migration `version` (`sql`) in `tx` and records it, unless it is
/// recorded already.
async fn apply(
    tx: &tokio_postgres::Transaction<'_>,
    version: i64,
    sql: &str,
) -> Result<(), StoreError> {
    let done: i64 = tx
        .query_one(
            "SELECT COUNT(*) FROM schema_migrations WHERE version = $1",
            &[&version],
        )
        .await
        .map_err(pg)?
        .get(0);
    if done == 0 {
        tx.batch_execute(sql).await.map_err(|e| {
            let StoreError::Database(m) = pg(e) else {
                return db("migration failed");
            };
            db(format!("migration {version}: {m}"))
        })?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)",
            &[&version, &crate::snapshots::now_rfc3339()],
        )
        .await
        .map_err(pg)?;
    }
    Ok(())
}
