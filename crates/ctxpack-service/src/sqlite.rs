//! The default store engine: SQLite (bundled), one file, WAL.
//!
//! One writer connection (SQLite has one writer at a time; queuing here is
//! cheaper than its busy loop) and a few readers, which WAL lets read while
//! the writer writes. Every call runs on tokio's blocking threads. Commits
//! are `synchronous = FULL`: a recorded snapshot survives the machine
//! losing power, not only the process being killed.

use crate::snapshots::{
    BoxFuture, Committed, Engine, PENDING, Publish, Stmt, StoreError, Value, pending_of,
};
use rusqlite::{Connection, OpenFlags, params_from_iter};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The migrations, in order: (version, SQL).
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../migrations/sqlite/0001_snapshots.sql")),
    (
        2,
        include_str!("../migrations/sqlite/0002_compressions.sql"),
    ),
    (3, include_str!("../migrations/sqlite/0003_documents.sql")),
    (4, include_str!("../migrations/sqlite/0004_relay.sql")),
    (5, include_str!("../migrations/sqlite/0005_requests.sql")),
    (6, include_str!("../migrations/sqlite/0006_fence.sql")),
    (7, include_str!("../migrations/sqlite/0007_model.sql")),
    (
        8,
        include_str!("../migrations/sqlite/0008_cache_prefixes.sql"),
    ),
    (10, include_str!("../migrations/sqlite/0010_chat.sql")),
];

/// The migrations the store runs once its own work is done
/// ([`Engine::late_migration`]): (version, SQL).
const LATE: &[(i64, &str)] = &[(
    crate::snapshots::CONTENTS_MOVED,
    include_str!("../migrations/sqlite/0009_artifacts.sql"),
)];

/// SQLite.
pub struct Sqlite {
    path: PathBuf,
    writer: Arc<Mutex<Connection>>,
    readers: Arc<Mutex<Vec<Connection>>>,
    slow_commit: Option<Duration>,
}

fn db(e: impl std::fmt::Display) -> StoreError {
    StoreError::Database(e.to_string())
}

fn open(path: &Path) -> Result<Connection, StoreError> {
    let c = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| db(format!("opening {}: {e}", path.display())))?;
    c.busy_timeout(Duration::from_secs(10)).map_err(db)?;
    c.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;",
    )
    .map_err(|e| db(format!("{}: {e}", path.display())))?;
    Ok(c)
}

impl Sqlite {
    /// Opens (creating if need be) the database at `path` and applies the
    /// migrations it lacks. `slow_commit` holds each write transaction that
    /// long before it commits: a slow disk, for fault tests.
    ///
    /// A file that does not exist is a new store. One that exists must be
    /// a ctxpack store: an empty file (0 bytes) or a database without
    /// ctxpack's schema is refused unless `init` (the snapshots it was
    /// expected to hold are gone, or the path is wrong), and one that fails
    /// SQLite's quick check is refused.
    pub fn open(
        path: &Path,
        slow_commit: Option<Duration>,
        init: bool,
    ) -> Result<Self, StoreError> {
        let refuse = |why: &str| {
            db(format!(
                "{}: {why}; restore it, or point --store at the right file, or start \
                 with --init-store to make a new store there",
                path.display()
            ))
        };
        let existed = match std::fs::metadata(path) {
            Ok(m) if m.len() == 0 && !init => {
                return Err(refuse("the store file is empty (0 bytes)"));
            }
            Ok(_) => true,
            Err(_) => false,
        };
        let mut writer = open(path)?;
        let check: String = writer
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(|e| {
                db(format!(
                    "{}: fails its integrity check: {e}",
                    path.display()
                ))
            })?;
        if check != "ok" {
            return Err(db(format!(
                "{}: fails its integrity check ({check}); restore it from a backup, or \
                 move it away and start with --init-store",
                path.display()
            )));
        }
        let ours: i64 = writer
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'schema_migrations'",
                [],
                |r| r.get(0),
            )
            .map_err(db)?;
        if existed && ours == 0 && !init {
            return Err(refuse("the file holds no ctxpack store"));
        }
        if !existed {
            tracing::warn!(target: "ctxpack::store", path = %path.display(), "no store file there: a new, empty store is made");
        }
        migrate(&mut writer)?;
        let readers = (0..4).map(|_| open(path)).collect::<Result<Vec<_>, _>>()?;
        Ok(Sqlite {
            path: path.to_owned(),
            writer: Arc::new(Mutex::new(writer)),
            readers: Arc::new(Mutex::new(readers)),
            slow_commit,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn migrate(c: &mut Connection) -> Result<(), StoreError> {
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations \
         (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
    )
    .map_err(db)?;
    for (version, sql) in MIGRATIONS {
        apply(c, *version, sql)?;
    }
    Ok(())
}

/// Runs migration `version` (`sql`) and records it, in one transaction,
/// unless it is recorded already.
fn apply(c: &mut Connection, version: i64, sql: &str) -> Result<(), StoreError> {
    let tx = c
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(db)?;
    let done: i64 = tx
        .query_row(
            "SELECT COUNT(*) FROM schema_migrations WHERE version = ?1",
            [version],
            |r| r.get(0),
        )
        .map_err(db)?;
    if done == 0 {
        tx.execute_batch(sql)
            .map_err(|e| db(format!("migration {version}: {e}")))?;
        tx.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)",
            rusqlite::params![version, crate::snapshots::now_rfc3339()],
        )
        .map_err(db)?;
    }
    tx.commit().map_err(db)
}

/// Every value of a check's rows, as text.
fn texts(rows: Vec<Vec<Value>>) -> Vec<String> {
    rows.into_iter()
        .flatten()
        .map(|v| match v {
            Value::Text(s) => s,
            other => format!("{other:?}"),
        })
        .collect()
}

fn bind(v: &Value) -> rusqlite::types::Value {
    use rusqlite::types::Value as V;
    match v {
        Value::Null => V::Null,
        Value::Int(n) => V::Integer(*n),
        Value::Real(f) => V::Real(*f),
        Value::Text(s) => V::Text(s.clone()),
        Value::Bool(b) => V::Integer(i64::from(*b)),
    }
}

fn read(v: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef as V;
    match v {
        V::Null => Value::Null,
        V::Integer(n) => Value::Int(n),
        V::Real(f) => Value::Real(f),
        V::Text(t) | V::Blob(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
    }
}

fn run_query(c: &Connection, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, StoreError> {
    let mut st = c.prepare_cached(sql).map_err(db)?;
    let n = st.column_count();
    let mut rows = st
        .query(params_from_iter(params.iter().map(bind)))
        .map_err(db)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(db)? {
        out.push(
            (0..n)
                .map(|i| r.get_ref(i).map(read).map_err(db))
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    Ok(out)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| db(format!("store task: {e}")))?
}

impl Engine for Sqlite {
    fn transaction(&self, stmts: Vec<Stmt>) -> BoxFuture<'_, Result<Committed, StoreError>> {
        let writer = self.writer.clone();
        let slow = self.slow_commit;
        Box::pin(blocking(move || {
            let mut c = writer.lock().map_err(|_| db("writer lock poisoned"))?;
            let tx = c
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(db)?;
            for s in &stmts {
                let changed = tx
                    .prepare_cached(s.sql)
                    .and_then(|mut st| st.execute(params_from_iter(s.params.iter().map(bind))))
                    .map_err(db)?;
                if s.must_change && changed == 0 {
                    // Dropped: rolled back.
                    return Ok(Committed::Conflict);
                }
            }
            if let Some(d) = slow {
                std::thread::sleep(d);
            }
            tx.commit().map_err(db)?;
            Ok(Committed::Yes)
        }))
    }

    fn query(
        &self,
        sql: &'static str,
        params: Vec<Value>,
    ) -> BoxFuture<'_, Result<Vec<Vec<Value>>, StoreError>> {
        let readers = self.readers.clone();
        let path = self.path.clone();
        Box::pin(blocking(move || {
            let taken = readers
                .lock()
                .map_err(|_| db("reader lock poisoned"))?
                .pop();
            let c = match taken {
                Some(c) => c,
                None => open(&path)?,
            };
            let out = run_query(&c, sql, &params);
            if let Ok(mut pool) = readers.lock() {
                pool.push(c);
            }
            out
        }))
    }

    fn quick_check(&self) -> BoxFuture<'_, Result<String, StoreError>> {
        Box::pin(async move {
            let rows = self.query("PRAGMA quick_check", Vec::new()).await?;
            Ok(texts(rows).join("; "))
        })
    }

    fn integrity_check(&self) -> BoxFuture<'_, Result<String, StoreError>> {
        let writer = self.writer.clone();
        Box::pin(blocking(move || {
            let c = writer.lock().map_err(|_| db("writer lock poisoned"))?;
            let mut found = texts(run_query(&c, "PRAGMA integrity_check", &[])?);
            let fk = run_query(&c, "PRAGMA foreign_key_check", &[])?;
            if !fk.is_empty() {
                found.push(format!("{} rows fail their foreign keys", fk.len()));
            }
            Ok(found.join("; "))
        }))
    }

    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn late_migration(&self, version: i64) -> BoxFuture<'_, Result<(), StoreError>> {
        let writer = self.writer.clone();
        Box::pin(blocking(move || {
            let (_, sql) = LATE
                .iter()
                .find(|(v, _)| *v == version)
                .ok_or_else(|| db(format!("no migration {version}")))?;
            let mut c = writer.lock().map_err(|_| db("writer lock poisoned"))?;
            apply(&mut c, version, sql)
        }))
    }

    fn relay<'a>(
        &'a self,
        limit: i64,
        at: String,
        publish: Publish<'a>,
    ) -> BoxFuture<'a, Result<(usize, usize), StoreError>> {
        // One relay per SQLite file (one process writes it): no claim is
        // needed; an event published twice after a crash is dropped by
        // the broker's de-duplication by id.
        Box::pin(async move {
            let rows = self.query(PENDING, vec![Value::Int(limit)]).await?;
            let pending = pending_of(rows)?;
            let claimed = pending.len();
            if claimed == 0 {
                return Ok((0, 0));
            }
            let published = publish(pending).await;
            let marked = published.len();
            if marked > 0 {
                let stmts = published
                    .into_iter()
                    .map(|id| Stmt {
                        sql: "UPDATE context_outbox SET published_at = $1 WHERE event_id = $2",
                        params: vec![Value::Text(at.clone()), Value::Text(id)],
                        must_change: false,
                    })
                    .collect();
                self.transaction(stmts).await?;
            }
            Ok((claimed, marked))
        })
    }
}
