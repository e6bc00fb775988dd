//! The snapshot store: the seed's `ContextSnapshots` and `ContextItems`
//! tables, the plan and content they reference stored once by hash in the
//! artifact store (the rows keep only the reference), the
//! `ContextAssembled` outbox and the deleted-citation records.
//!
//! By its seams: the engine trait (`engine`), the object store
//! (`artifacts`), rows by column name (`row`), writing a record
//! (`write`), reading snapshots back (`read`), lineage (`lineage`), the
//! outbox (`outbox`) and index health (`health`).
//!
//! [`Store`] holds the repository's logic once, written against [`Engine`]:
//! the one trait a database implements (a transaction of statements, a
//! query). [`crate::sqlite::Sqlite`] is the default engine;
//! [`crate::postgres::Postgres`] runs the same schema for several replicas
//! behind a load balancer. Statements use `$1`… placeholders, which both
//! read.

mod artifacts;
mod engine;
mod health;
mod lineage;
mod outbox;
mod read;
mod row;
mod write;

pub use artifacts::Artifacts;
pub use engine::{BoxFuture, Committed, Engine, Stmt, StoreError, Value};
pub(crate) use outbox::{PENDING, pending_of};
pub use outbox::{Pending, Publish, TOPIC};
pub use read::{Detail, Summary};
pub use row::{json, name};
pub use write::{Record, Recorded};

use row::{corrupt, uint};
use std::sync::Arc;

/// The migration that drops the bodies from the database once they are in
/// the artifact store.
pub const CONTENTS_MOVED: i64 = 9;

/// Counts for checking a store after a load run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Census {
    /// Snapshot rows.
    pub snapshots: u64,
    /// Outbox events.
    pub events: u64,
    /// Snapshots without exactly one event.
    pub unmatched: u64,
    /// Snapshots whose plan or content is not in the artifact store.
    pub without_content: u64,
    /// The database's integrity check.
    pub integrity: String,
}

/// The snapshot repository over an engine.
#[derive(Clone)]
pub struct Store {
    engine: Arc<dyn Engine>,
    /// Where plans and contents are, by hash.
    artifacts: Artifacts,
    /// Why the store is known to be corrupt, once it is: it takes no more
    /// writes (a restart runs the full check and refuses it).
    corrupt: Arc<std::sync::Mutex<Option<String>>>,
}

impl Store {
    /// A store on `engine`, whose schema is migrated, with its plans and
    /// contents in `artifacts`; contents still in the database (a store
    /// from before the artifact store) are moved there first.
    pub async fn open(engine: Arc<dyn Engine>, artifacts: Artifacts) -> Result<Self, StoreError> {
        let store = Store {
            engine,
            artifacts,
            corrupt: Default::default(),
        };
        store.move_contents().await?;
        store.holds_its_contents().await?;
        Ok(store)
    }

    /// Refuses an artifact store that does not hold the newest snapshot's
    /// content: it is not the one the store was written with (a
    /// `--artifacts` left out or mistyped), and every read of a snapshot
    /// would fail.
    async fn holds_its_contents(&self) -> Result<(), StoreError> {
        let rows = self
            .read(
                "SELECT content_ref FROM context_snapshots \
                 ORDER BY assembled_at DESC, context_snapshot_id LIMIT 1",
                vec![],
            )
            .await?;
        let Some(Value::Text(newest)) = rows.first().and_then(|r| r.first()) else {
            return Ok(());
        };
        match self.artifacts.size(newest).await? {
            Some(_) => Ok(()),
            None => Err(StoreError::Artifacts(format!(
                "{} does not hold this store's contents (the newest snapshot's, {newest}, \
                 is not there): give the --artifacts the store was written with",
                self.artifacts.described()
            ))),
        }
    }

    /// The artifact store.
    pub fn artifacts(&self) -> &Artifacts {
        &self.artifacts
    }

    /// Whether migration `version` has run.
    async fn migrated(&self, version: i64) -> Result<bool, StoreError> {
        let sql = "SELECT COUNT(*) FROM schema_migrations WHERE version = $1";
        Ok(self.count(sql, vec![Value::Int(version)]).await? > 0)
    }

    /// Copies every body still in `context_contents` to the artifact store,
    /// each checked against its hash, then drops the bodies
    /// ([`CONTENTS_MOVED`]). A copy cut short is copied again at the next
    /// start (a put of the same hash writes the same object); a replica
    /// that finds another has finished the move goes on.
    async fn move_contents(&self) -> Result<(), StoreError> {
        if self.migrated(CONTENTS_MOVED).await? {
            return Ok(());
        }
        match self.copy_contents().await {
            Ok(moved) => {
                if moved > 0 {
                    tracing::info!(
                        target: "ctxpack::store",
                        moved,
                        artifacts = self.artifacts.described(),
                        "stored contents moved to the artifact store"
                    );
                }
                self.engine.late_migration(CONTENTS_MOVED).await
            }
            Err(_) if self.migrated(CONTENTS_MOVED).await? => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Puts every body of `context_contents` in the artifact store; answers
    /// how many.
    async fn copy_contents(&self) -> Result<u64, StoreError> {
        let mut after = String::new();
        let mut moved = 0;
        loop {
            let rows = self
                .read(
                    "SELECT content_hash, body FROM context_contents WHERE content_hash > $1 \
                     ORDER BY content_hash LIMIT 256",
                    vec![Value::Text(after.clone())],
                )
                .await?;
            if rows.is_empty() {
                return Ok(moved);
            }
            for r in &rows {
                let (Some(Value::Text(hash)), Some(Value::Text(body))) = (r.first(), r.get(1))
                else {
                    return Err(corrupt(
                        "context_contents",
                        "a row without its hash or body",
                    ));
                };
                if ctxpack_core::text_hash(body) != *hash {
                    return Err(corrupt(hash, "the stored body is not its hash's"));
                }
                self.artifacts.put(hash, body).await?;
                moved += 1;
                after.clone_from(hash);
            }
        }
    }

    /// Why the store is known to be corrupt, if it is.
    pub fn corrupt(&self) -> Option<String> {
        self.corrupt.lock().ok().and_then(|c| c.clone())
    }

    /// Notes `e` if it says the database is corrupt; answers `e`.
    fn noticed(&self, e: StoreError) -> StoreError {
        let StoreError::Database(m) = &e else {
            return e;
        };
        let lower = m.to_lowercase();
        if (lower.contains("malformed") || lower.contains("not a database"))
            && let Ok(mut c) = self.corrupt.lock()
            && c.is_none()
        {
            tracing::error!(target: "ctxpack::store", error = %m, "the store is corrupt: no more writes");
            *c = Some(m.clone());
        }
        e
    }

    /// The rows of one query; an error saying the store is corrupt is
    /// noted.
    async fn read(
        &self,
        sql: &'static str,
        params: Vec<Value>,
    ) -> Result<Vec<Vec<Value>>, StoreError> {
        self.engine
            .query(sql, params)
            .await
            .map_err(|e| self.noticed(e))
    }

    /// Runs the engine's quick check; a store that fails it is corrupt.
    pub async fn quick_check(&self) -> Result<(), StoreError> {
        let found = self
            .engine
            .quick_check()
            .await
            .map_err(|e| self.noticed(e))?;
        if found != "ok" {
            return Err(self.noticed(StoreError::Database(format!(
                "database disk image is malformed: {found}"
            ))));
        }
        Ok(())
    }

    /// The engine's name.
    pub fn engine_name(&self) -> &'static str {
        self.engine.name()
    }

    /// The engine, for the other tables' repositories (the index).
    pub(crate) fn engine(&self) -> &dyn Engine {
        self.engine.as_ref()
    }

    /// Writes and commits one small row: what a snapshot needs of the
    /// store (space, a writable file, readable pages).
    pub async fn probe(&self) -> Result<(), StoreError> {
        if let Some(why) = self.corrupt() {
            return Err(StoreError::Database(format!("corrupt: {why}")));
        }
        match self
            .engine
            .transaction(vec![Stmt {
                sql: "INSERT INTO readiness_probe (probe, probed_at) VALUES ('readiness', $1) \
                      ON CONFLICT (probe) DO UPDATE SET probed_at = excluded.probed_at",
                params: vec![Value::Text(now_rfc3339())],
                must_change: false,
            }])
            .await
            .map_err(|e| self.noticed(e))?
        {
            Committed::Yes | Committed::Conflict => Ok(()),
        }
    }

    /// Counts every snapshot and event, and runs the integrity check.
    pub async fn census(&self) -> Result<Census, StoreError> {
        let rows = self
            .read(
                "SELECT (SELECT COUNT(*) FROM context_snapshots), \
                 (SELECT COUNT(*) FROM context_outbox), \
                 (SELECT COUNT(*) FROM context_snapshots s WHERE (SELECT COUNT(*) FROM \
                 context_outbox o WHERE o.event_id = s.context_snapshot_id) <> 1)",
                vec![],
            )
            .await?;
        let r = rows.first().ok_or_else(|| corrupt("census", "no count"))?;
        let stored = self.artifacts.hashes().await?;
        let refs = self
            .read(
                "SELECT plan_ref, content_ref FROM context_snapshots",
                vec![],
            )
            .await?;
        let without_content = refs
            .iter()
            .filter(|r| {
                r.iter()
                    .any(|v| !matches!(v, Value::Text(h) if stored.contains(h)))
            })
            .count();
        Ok(Census {
            snapshots: uint(&r[0], "census")?,
            events: uint(&r[1], "census")?,
            unmatched: uint(&r[2], "census")?,
            without_content: u64::try_from(without_content).unwrap_or(u64::MAX),
            integrity: self.engine.integrity_check().await?,
        })
    }

    /// The one integer a counting query answers (for checks and tests).
    pub async fn count(&self, sql: &'static str, params: Vec<Value>) -> Result<u64, StoreError> {
        let rows = self.read(sql, params).await?;
        rows.first()
            .and_then(|r| r.first())
            .map_or(Ok(0), |v| uint::<u64>(v, sql))
    }

    /// Runs one statement outside the repository's operations (for tests
    /// that prove what the schema refuses).
    pub async fn execute(&self, sql: &'static str, params: Vec<Value>) -> Result<(), StoreError> {
        self.engine
            .transaction(vec![Stmt {
                sql,
                params,
                must_change: false,
            }])
            .await
            .map(|_| ())
    }
}

/// Now, RFC 3339 in UTC with milliseconds.
pub fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(now.as_secs(), now.subsec_millis())
}

/// `secs` since the Unix epoch (and `millis`), RFC 3339 in UTC.
pub fn rfc3339(secs: u64, millis: u32) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(rfc3339(1_796_083_199, 999), "2026-11-30T23:59:59.999Z");
    }
}
