//! The snapshot store: the seed's `ContextSnapshots` and `ContextItems`
//! tables, the content they reference stored once by hash, the
//! `ContextAssembled` outbox and the deleted-citation records.
//!
//! [`Store`] holds the repository's logic once, written against [`Engine`]:
//! the one trait a database implements (a transaction of statements, a
//! query). [`crate::sqlite::Sqlite`] is the default engine;
//! [`crate::postgres::Postgres`] runs the same schema for several replicas
//! behind a load balancer. Statements use `$1`… placeholders, which both
//! read.

use ctxpack_core::{
    CompressionMetadata, ContextAssembled, Provenance, Run, Snapshot, SnapshotEntry,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future, as [`Engine`]'s methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A value bound to or read from a statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// An integer.
    Int(i64),
    /// A float.
    Real(f64),
    /// Text.
    Text(String),
    /// A boolean (an integer 0 or 1 in SQLite).
    Bool(bool),
}

impl From<Option<String>> for Value {
    fn from(v: Option<String>) -> Self {
        v.map_or(Value::Null, Value::Text)
    }
}

/// One statement of a transaction.
#[derive(Clone, Debug)]
pub struct Stmt {
    /// The SQL, with `$1`… placeholders.
    pub sql: &'static str,
    /// The values, in placeholder order.
    pub params: Vec<Value>,
    /// When set, a statement that changes no row rolls the transaction
    /// back and it ends [`Committed::Conflict`].
    pub must_change: bool,
}

/// How a transaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Committed {
    /// Every statement ran; committed.
    Yes,
    /// A `must_change` statement changed nothing; rolled back.
    Conflict,
}

/// A store failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed.
    #[error("store: {0}")]
    Database(String),
    /// A row the service wrote cannot be read back.
    #[error("store: row of snapshot {snapshot}: {message}")]
    Corrupt {
        /// The snapshot.
        snapshot: String,
        /// What is wrong.
        message: String,
    },
}

/// A SQL database the store runs on.
pub trait Engine: Send + Sync + 'static {
    /// Runs `stmts` in one transaction.
    fn transaction(&self, stmts: Vec<Stmt>) -> BoxFuture<'_, Result<Committed, StoreError>>;
    /// The rows of one query, each value as the engine typed it.
    fn query(
        &self,
        sql: &'static str,
        params: Vec<Value>,
    ) -> BoxFuture<'_, Result<Vec<Vec<Value>>, StoreError>>;
    /// The database's own integrity check: `ok`, or what it found.
    fn integrity_check(&self) -> BoxFuture<'_, Result<String, StoreError>>;
    /// A quicker check, run while serving, that does not hold up writes:
    /// `ok`, or what it found. PostgreSQL checks pages as it reads them.
    fn quick_check(&self) -> BoxFuture<'_, Result<String, StoreError>> {
        Box::pin(async { Ok("ok".to_owned()) })
    }
    /// The engine's name, for logs.
    fn name(&self) -> &'static str;
    /// Claims up to `limit` unpublished events, oldest first — on
    /// PostgreSQL with row locks that skip those another replica's relay
    /// holds — and gives them to `publish`, which answers the ids the
    /// broker acknowledged; those are marked published at `at` before the
    /// claim is released. Answers how many were claimed and marked.
    fn relay<'a>(
        &'a self,
        limit: i64,
        at: String,
        publish: Publish<'a>,
    ) -> BoxFuture<'a, Result<(usize, usize), StoreError>>;
}

/// An event waiting in the outbox.
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    /// Its id: the snapshot's.
    pub event_id: String,
    /// The subject it goes to.
    pub topic: String,
    /// The event, as the outbox holds it (kebab-case JSON).
    pub payload: String,
}

/// Publishes claimed events, answering the ids the broker acknowledged.
pub type Publish<'a> = Box<dyn FnOnce(Vec<Pending>) -> BoxFuture<'a, Vec<String>> + Send + 'a>;

/// The claimed rows of an outbox query, as [`Pending`] events.
pub(crate) fn pending_of(rows: Vec<Vec<Value>>) -> Result<Vec<Pending>, StoreError> {
    rows.into_iter()
        .map(|r| {
            let id = text(r.first().unwrap_or(&Value::Null), "outbox")?;
            Ok(Pending {
                topic: text(r.get(1).unwrap_or(&Value::Null), &id)?,
                payload: text(r.get(2).unwrap_or(&Value::Null), &id)?,
                event_id: id,
            })
        })
        .collect()
}

/// The events waiting, oldest first (`$1`: how many).
pub(crate) const PENDING: &str = "SELECT event_id, topic, payload FROM context_outbox \
     WHERE published_at IS NULL ORDER BY sequence LIMIT $1";

/// The `ContextAssembled` topic.
pub const TOPIC: &str = "context-assembly.snapshots.v1.context-assembled";

/// What one assembly leaves to record.
#[derive(Clone, Debug)]
pub struct Record {
    /// The snapshot (a pack's, or a failed assembly's).
    pub snapshot: Snapshot,
    /// The rendered text (empty for a failed assembly).
    pub text: String,
    /// What was done to fit.
    pub compression: CompressionMetadata,
    /// Session and trace of the request.
    pub session_id: Option<String>,
    /// Trace.
    pub trace_id: String,
    /// The event to publish.
    pub event: ContextAssembled,
    /// Tokens per section, by name, for the metrics (not stored: the items
    /// hold them).
    pub sections: Vec<(String, u32)>,
    /// When, RFC 3339 in UTC.
    pub assembled_at: String,
    /// SHA-256 (hex) of the normalised request: the same request for the
    /// attempt replays this record, any other is refused.
    pub request_hash: String,
    /// The user the attempt ran for.
    pub user_id: Option<String>,
}

/// What became of a [`Record`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// Stored now, with its event.
    New,
    /// The attempt already had this very snapshot (a retry): nothing
    /// written.
    Replayed,
    /// The attempt already has another snapshot, this id.
    AttemptTaken(String),
}

/// A snapshot as the run's list shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Id.
    pub context_snapshot_id: String,
    /// Project.
    pub project_id: Option<String>,
    /// Run.
    pub run_id: String,
    /// Attempt.
    pub attempt_id: String,
    /// Every condition that holds.
    pub status: Vec<String>,
    /// Budget.
    pub token_budget: u32,
    /// Tokens used.
    pub tokens_used: u32,
    /// Candidates included.
    pub included: u32,
    /// Candidates dropped.
    pub dropped: u32,
    /// `sha256:<hex>` of the assembled text.
    pub content_ref: String,
    /// When.
    pub assembled_at: String,
    /// Why it failed, if it did.
    pub failure: Option<String>,
}

/// A snapshot read back whole.
#[derive(Clone, Debug, PartialEq)]
pub struct Detail {
    /// The snapshot, as the core made it.
    pub snapshot: Snapshot,
    /// What was done to fit.
    pub compression: CompressionMetadata,
    /// When.
    pub assembled_at: String,
    /// Session.
    pub session_id: Option<String>,
    /// Trace.
    pub trace_id: Option<String>,
    /// Sources deleted since, each with when it was recorded.
    pub deleted_citations: Vec<(String, String)>,
    /// How many items the snapshot has (`snapshot.entries` may hold a
    /// page of them).
    pub items_total: u64,
    /// Where in them the page begins.
    pub items_offset: u64,
}

/// Counts for checking a store after a load run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Census {
    /// Snapshot rows.
    pub snapshots: u64,
    /// Outbox events.
    pub events: u64,
    /// Snapshots without exactly one event.
    pub unmatched: u64,
    /// The database's integrity check.
    pub integrity: String,
}

/// The snapshot repository over an engine.
#[derive(Clone)]
pub struct Store {
    engine: Arc<dyn Engine>,
    /// Why the store is known to be corrupt, once it is: it takes no more
    /// writes (a restart runs the full check and refuses it).
    corrupt: Arc<std::sync::Mutex<Option<String>>>,
}

const INSERT_CONTENT: &str = "INSERT INTO context_contents (content_hash, kind, body) \
     VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";
const INSERT_SNAPSHOT: &str = "INSERT INTO context_snapshots (context_snapshot_id, tenant_id, \
     project_id, run_id, attempt_id, plan_ref, token_budget, tokens_used, status, \
     index_revisions, memory_items, content_ref, assembled_at, failure, session_id, trace_id, \
     scopes, tokenizer, text_tokens, message_tokens, stable_prefix_tokens, profile, \
     source_calls, compression, compressions, request_hash, user_id, fence) VALUES ($1, $2, $3, \
     $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, \
     $23, $24, $25, $26, $27, $28) \
     ON CONFLICT DO NOTHING";
const INSERT_ITEM: &str = "INSERT INTO context_items (context_snapshot_id, position, item_id, \
     layer, section, origin, source_kind, reference, source_version, index_revision, \
     trust_tier, score, included, drop_reason, reason, tokens, counted, compressed, redacted, \
     run_last_id, run_count) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
     $14, $15, $16, $17, $18, $19, $20, $21)";
const INSERT_EVENT: &str = "INSERT INTO context_outbox (event_id, topic, tenant_id, payload, \
     created_at) VALUES ($1, $2, $3, $4, $5)";
const SNAPSHOT_COLUMNS: &str = "context_snapshot_id, tenant_id, project_id, run_id, attempt_id, \
     plan_ref, token_budget, tokens_used, status, index_revisions, memory_items, content_ref, \
     assembled_at, failure, session_id, trace_id, scopes, tokenizer, text_tokens, \
     message_tokens, stable_prefix_tokens, profile, source_calls, compression, compressions, \
     fence";

impl Store {
    /// A store on `engine`, whose schema is migrated.
    pub fn new(engine: Arc<dyn Engine>) -> Self {
        Store {
            engine,
            corrupt: Default::default(),
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

    /// Records `record`: its content and plan by hash, the snapshot row,
    /// its items and its event, in one transaction. An attempt that has a
    /// snapshot already is not written again.
    pub async fn record(&self, record: &Record) -> Result<Recorded, StoreError> {
        let s = &record.snapshot;
        let tenant = s.tenant_id.clone().unwrap_or_default();
        let run = s.run_id.clone().unwrap_or_default();
        let attempt = s.attempt_id.clone().unwrap_or_default();
        let plan = json(&s.plan);
        let plan_hash = ctxpack_core::text_hash(&plan);
        if ctxpack_core::text_hash(&record.text) != s.content_hash {
            return Err(corrupt(&s.id, "the text is not the snapshot's content"));
        }
        let mut stmts = vec![
            content_stmt(&plan_hash, "plan", plan),
            content_stmt(&s.content_hash, "context", record.text.clone()),
            Stmt {
                sql: INSERT_SNAPSHOT,
                params: vec![
                    Value::Text(s.id.clone()),
                    Value::Text(tenant.clone()),
                    s.project_id.clone().into(),
                    Value::Text(run.clone()),
                    Value::Text(attempt.clone()),
                    Value::Text(plan_hash),
                    Value::Int(s.token_budget.into()),
                    Value::Int(s.tokens_used.into()),
                    Value::Text(json(&s.status)),
                    Value::Text(json(&s.index_revisions)),
                    Value::Text(json(&s.memory_items)),
                    Value::Text(s.content_hash.clone()),
                    Value::Text(record.assembled_at.clone()),
                    s.failure.clone().into(),
                    record.session_id.clone().into(),
                    Value::Text(record.trace_id.clone()),
                    Value::Text(json(&s.scopes)),
                    Value::Text(json(&s.tokenizer)),
                    Value::Int(s.text_tokens.into()),
                    Value::Int(s.message_tokens.into()),
                    Value::Int(s.stable_prefix_tokens.into()),
                    Value::Text(json(&s.profile)),
                    Value::Text(json(&s.source_calls)),
                    Value::Text(json(&record.compression)),
                    Value::Text(json(&s.compressions)),
                    Value::Text(record.request_hash.clone()),
                    record.user_id.clone().into(),
                    Value::Text(json(&s.fence)),
                ],
                must_change: true,
            },
        ];
        for (position, e) in s.entries.iter().enumerate() {
            stmts.push(item_stmt(&s.id, position, e));
        }
        stmts.push(Stmt {
            sql: INSERT_EVENT,
            params: vec![
                Value::Text(s.id.clone()),
                Value::Text(TOPIC.into()),
                Value::Text(tenant.clone()),
                Value::Text(json(&record.event)),
                Value::Text(record.assembled_at.clone()),
            ],
            must_change: false,
        });
        if let Some(why) = self.corrupt() {
            return Err(StoreError::Database(format!(
                "the store is corrupt ({why}): nothing more is written to it; \
                 restore it and restart"
            )));
        }
        match self
            .engine
            .transaction(stmts)
            .await
            .map_err(|e| self.noticed(e))?
        {
            Committed::Yes => Ok(Recorded::New),
            Committed::Conflict => {
                let rows = self
                    .read(
                        "SELECT context_snapshot_id, request_hash FROM context_snapshots \
                         WHERE tenant_id = $1 AND run_id = $2 AND attempt_id = $3",
                        vec![Value::Text(tenant), Value::Text(run), Value::Text(attempt)],
                    )
                    .await?;
                let existing = rows
                    .first()
                    .map(|r| Ok::<_, StoreError>((text(&r[0], &s.id)?, opt_text(&r[1], &s.id)?)))
                    .transpose()?;
                match existing {
                    // A row from before request hashes replays as before.
                    Some((id, hash))
                        if id == s.id
                            && hash.as_ref().is_none_or(|h| *h == record.request_hash) =>
                    {
                        Ok(Recorded::Replayed)
                    }
                    Some((id, _)) => Ok(Recorded::AttemptTaken(id)),
                    // The same id under another attempt cannot be: the id
                    // hashes the attempt.
                    None => Err(StoreError::Database(format!(
                        "snapshot {} conflicts with a row that is not its attempt's",
                        s.id
                    ))),
                }
            }
        }
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

    /// The snapshots of `tenant`'s run `run_id`, oldest first.
    pub async fn list(&self, tenant: &str, run_id: &str) -> Result<Vec<Summary>, StoreError> {
        self.list_page(tenant, run_id, None, i64::MAX as u64).await
    }

    /// At most `limit` of the snapshots of `tenant`'s run `run_id`, oldest
    /// first, from the one after snapshot `after`.
    pub async fn list_page(
        &self,
        tenant: &str,
        run_id: &str,
        after: Option<&str>,
        limit: u64,
    ) -> Result<Vec<Summary>, StoreError> {
        let rows = self
            .read(
                "SELECT s.context_snapshot_id, s.project_id, s.run_id, s.attempt_id, s.status, \
                 s.token_budget, s.tokens_used, s.content_ref, s.assembled_at, s.failure, \
                 (SELECT COUNT(*) FROM context_items i WHERE i.context_snapshot_id = \
                 s.context_snapshot_id AND i.included), \
                 (SELECT CAST(COALESCE(SUM(COALESCE(i.run_count, 1)), 0) AS BIGINT) FROM context_items i \
                 WHERE i.context_snapshot_id = s.context_snapshot_id AND NOT i.included) \
                 FROM context_snapshots s WHERE s.tenant_id = $1 AND s.run_id = $2 \
                 AND ($3 = '' OR (s.assembled_at, s.context_snapshot_id) > \
                 (SELECT a.assembled_at, a.context_snapshot_id FROM context_snapshots a \
                 WHERE a.context_snapshot_id = $3 AND a.tenant_id = $1)) \
                 ORDER BY s.assembled_at, s.context_snapshot_id LIMIT $4",
                vec![
                    Value::Text(tenant.into()),
                    Value::Text(run_id.into()),
                    Value::Text(after.unwrap_or("").into()),
                    Value::Int(i64::try_from(limit).unwrap_or(i64::MAX)),
                ],
            )
            .await?;
        rows.iter()
            .map(|r| {
                let id = text(&r[0], "?")?;
                let at = |i: usize| text(&r[i], &id);
                Ok(Summary {
                    project_id: opt_text(&r[1], &id)?,
                    run_id: at(2)?,
                    attempt_id: at(3)?,
                    status: parse(&at(4)?, &id)?,
                    token_budget: uint(&r[5], &id)?,
                    tokens_used: uint(&r[6], &id)?,
                    content_ref: format!("sha256:{}", at(7)?),
                    assembled_at: at(8)?,
                    failure: opt_text(&r[9], &id)?,
                    included: uint(&r[10], &id)?,
                    dropped: uint(&r[11], &id)?,
                    context_snapshot_id: id,
                })
            })
            .collect()
    }

    /// `tenant`'s snapshot `id`, read back whole; `None` when the tenant
    /// has no such snapshot.
    pub async fn get(&self, tenant: &str, id: &str) -> Result<Option<Detail>, StoreError> {
        self.get_page(tenant, id, 0, i64::MAX as u64).await
    }

    /// `tenant`'s snapshot `id` with `limit` of its items from `offset`
    /// (in their order); `None` when the tenant has no such snapshot.
    pub async fn get_page(
        &self,
        tenant: &str,
        id: &str,
        offset: u64,
        limit: u64,
    ) -> Result<Option<Detail>, StoreError> {
        let sql: &'static str = SNAPSHOT_BY_ID.get_or_init(|| {
            format!(
                "SELECT {SNAPSHOT_COLUMNS} FROM context_snapshots \
                 WHERE context_snapshot_id = $1 AND tenant_id = $2"
            )
        });
        let rows = self
            .read(
                sql,
                vec![Value::Text(id.into()), Value::Text(tenant.into())],
            )
            .await?;
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        let at = |i: usize| text(&r[i], id);
        let plan_body = self
            .content(&at(5)?)
            .await?
            .ok_or_else(|| corrupt(id, "plan"))?;
        let items = self
            .read(
                "SELECT item_id, layer, section, origin, source_kind, reference, \
                 source_version, index_revision, trust_tier, score, included, reason, tokens, \
                 counted, compressed, redacted, run_last_id, run_count FROM context_items \
                 WHERE context_snapshot_id = $1 ORDER BY position LIMIT $2 OFFSET $3",
                vec![
                    Value::Text(id.into()),
                    Value::Int(i64::try_from(limit).unwrap_or(i64::MAX)),
                    Value::Int(i64::try_from(offset).unwrap_or(i64::MAX)),
                ],
            )
            .await?;
        let items_total = self
            .count(
                "SELECT COUNT(*) FROM context_items WHERE context_snapshot_id = $1",
                vec![Value::Text(id.into())],
            )
            .await?;
        let entries = items
            .iter()
            .map(|i| entry(i, id))
            .collect::<Result<Vec<_>, _>>()?;
        let deleted = self
            .read(
                "SELECT source_id, deleted_at FROM deleted_citations \
                 WHERE context_snapshot_id = $1 ORDER BY deleted_at, source_id",
                vec![Value::Text(id.into())],
            )
            .await?
            .iter()
            .map(|d| Ok((text(&d[0], id)?, text(&d[1], id)?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let snapshot = Snapshot {
            id: at(0)?,
            tenant_id: Some(at(1)?),
            project_id: opt_text(&r[2], id)?,
            run_id: Some(at(3)?),
            attempt_id: Some(at(4)?),
            scopes: parse(&at(16)?, id)?,
            tokenizer: parse(&at(17)?, id)?,
            token_budget: uint(&r[6], id)?,
            tokens_used: uint(&r[7], id)?,
            text_tokens: uint(&r[18], id)?,
            message_tokens: uint(&r[19], id)?,
            stable_prefix_tokens: uint(&r[20], id)?,
            content_hash: at(11)?,
            index_revisions: parse(&at(9)?, id)?,
            memory_items: parse(&at(10)?, id)?,
            status: parse(&at(8)?, id)?,
            failure: opt_text(&r[13], id)?,
            profile: parse(&at(21)?, id)?,
            plan: parse(&plan_body, id)?,
            source_calls: parse(&at(22)?, id)?,
            compressions: parse(&at(24)?, id)?,
            fence: parse(&at(25)?, id)?,
            entries,
        };
        Ok(Some(Detail {
            snapshot,
            compression: parse(&at(23)?, id)?,
            assembled_at: at(12)?,
            session_id: opt_text(&r[14], id)?,
            trace_id: opt_text(&r[15], id)?,
            deleted_citations: deleted,
            items_total,
            items_offset: offset,
        }))
    }

    /// The stored body with hash `hash` (hex).
    pub async fn content(&self, hash: &str) -> Result<Option<String>, StoreError> {
        let rows = self
            .read(
                "SELECT body FROM context_contents WHERE content_hash = $1",
                vec![Value::Text(hash.into())],
            )
            .await?;
        rows.first()
            .and_then(|r| r.first())
            .map(|v| text(v, hash))
            .transpose()
    }

    /// The size in bytes of the assembled text of `tenant`'s snapshot
    /// `id`; `None` when the tenant has no such snapshot.
    pub async fn content_size(&self, tenant: &str, id: &str) -> Result<Option<u64>, StoreError> {
        let rows = self
            .read(
                "SELECT CAST(octet_length(c.body) AS BIGINT) FROM context_snapshots s \
                 JOIN context_contents c ON c.content_hash = s.content_ref \
                 WHERE s.context_snapshot_id = $1 AND s.tenant_id = $2",
                vec![Value::Text(id.into()), Value::Text(tenant.into())],
            )
            .await?;
        rows.first()
            .and_then(|r| r.first())
            .map(|v| uint(v, id))
            .transpose()
    }

    /// The assembled text of `tenant`'s snapshot `id`; `None` when the
    /// tenant has no such snapshot.
    pub async fn content_of(&self, tenant: &str, id: &str) -> Result<Option<String>, StoreError> {
        let rows = self
            .read(
                "SELECT c.body FROM context_snapshots s JOIN context_contents c \
                 ON c.content_hash = s.content_ref \
                 WHERE s.context_snapshot_id = $1 AND s.tenant_id = $2",
                vec![Value::Text(id.into()), Value::Text(tenant.into())],
            )
            .await?;
        rows.first()
            .and_then(|r| r.first())
            .map(|v| text(v, id))
            .transpose()
    }

    /// Records that source `source_id` was deleted: each of `tenant`'s
    /// snapshots with an item citing it (as its reference) is marked as
    /// carrying a deleted citation; the snapshots' rows are not touched.
    /// Answers how many snapshots were newly marked.
    pub async fn source_deleted(
        &self,
        tenant: &str,
        source_id: &str,
        at: &str,
    ) -> Result<u64, StoreError> {
        let before = self.marked(tenant, source_id).await?;
        self.engine
            .transaction(vec![Stmt {
                sql: "INSERT INTO deleted_citations (context_snapshot_id, source_id, tenant_id, \
                      deleted_at) SELECT DISTINCT s.context_snapshot_id, CAST($1 AS TEXT), \
                      CAST($2 AS TEXT), CAST($3 AS TEXT) \
                      FROM context_snapshots s JOIN context_items i \
                      ON i.context_snapshot_id = s.context_snapshot_id \
                      WHERE s.tenant_id = $2 AND i.reference = $1 \
                      ON CONFLICT DO NOTHING",
                params: vec![
                    Value::Text(source_id.into()),
                    Value::Text(tenant.into()),
                    Value::Text(at.into()),
                ],
                must_change: false,
            }])
            .await?;
        Ok(self.marked(tenant, source_id).await? - before)
    }

    async fn marked(&self, tenant: &str, source_id: &str) -> Result<u64, StoreError> {
        let rows = self
            .read(
                "SELECT COUNT(*) FROM deleted_citations WHERE tenant_id = $1 AND source_id = $2",
                vec![Value::Text(tenant.into()), Value::Text(source_id.into())],
            )
            .await?;
        rows.first()
            .and_then(|r| r.first())
            .map_or(Ok(0), |v| uint::<u64>(v, source_id))
    }

    /// Whether the snapshot `id` exists for `tenant`, with how many events.
    pub async fn events_of(&self, id: &str) -> Result<(u64, u64), StoreError> {
        let rows = self
            .read(
                "SELECT (SELECT COUNT(*) FROM context_snapshots WHERE context_snapshot_id = $1), \
                 (SELECT COUNT(*) FROM context_outbox WHERE event_id = $1)",
                vec![Value::Text(id.into())],
            )
            .await?;
        let r = rows.first().ok_or_else(|| corrupt(id, "no count"))?;
        Ok((uint(&r[0], id)?, uint(&r[1], id)?))
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
        Ok(Census {
            snapshots: uint(&r[0], "census")?,
            events: uint(&r[1], "census")?,
            unmatched: uint(&r[2], "census")?,
            integrity: self.engine.integrity_check().await?,
        })
    }

    /// Relays up to `limit` waiting events through `publish` (see
    /// [`Engine::relay`]).
    pub async fn relay<'a>(
        &'a self,
        limit: i64,
        publish: Publish<'a>,
    ) -> Result<(usize, usize), StoreError> {
        self.engine.relay(limit, now_rfc3339(), publish).await
    }

    /// Events not yet published.
    pub async fn unpublished(&self) -> Result<u64, StoreError> {
        self.count(
            "SELECT COUNT(*) FROM context_outbox WHERE published_at IS NULL",
            vec![],
        )
        .await
    }

    /// Records what the index `index` is now: degraded, for `reason`, or
    /// recovered.
    pub async fn set_index_health(
        &self,
        index: &str,
        degraded: bool,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.engine
            .transaction(vec![Stmt {
                sql: "INSERT INTO index_health (index_id, degraded, reason, changed_at) \
                      VALUES ($1, $2, $3, $4) ON CONFLICT (index_id) DO UPDATE SET \
                      degraded = excluded.degraded, reason = excluded.reason, \
                      changed_at = excluded.changed_at",
                params: vec![
                    Value::Text(index.into()),
                    Value::Bool(degraded),
                    Value::Text(reason.into()),
                    Value::Text(now_rfc3339()),
                ],
                must_change: false,
            }])
            .await
            .map(drop)
    }

    /// The indexes degraded now, with why.
    pub async fn degraded_indexes(
        &self,
    ) -> Result<std::collections::BTreeMap<String, String>, StoreError> {
        let rows = self
            .read(
                "SELECT index_id, reason FROM index_health WHERE degraded = $1",
                vec![Value::Bool(true)],
            )
            .await?;
        rows.into_iter()
            .map(|r| {
                let id = text(r.first().unwrap_or(&Value::Null), "index_health")?;
                let reason = text(r.get(1).unwrap_or(&Value::Null), &id)?;
                Ok((id, reason))
            })
            .collect()
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

static SNAPSHOT_BY_ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn content_stmt(hash: &str, kind: &str, body: String) -> Stmt {
    Stmt {
        sql: INSERT_CONTENT,
        params: vec![
            Value::Text(hash.into()),
            Value::Text(kind.into()),
            Value::Text(body),
        ],
        must_change: false,
    }
}

fn item_stmt(snapshot: &str, position: usize, e: &SnapshotEntry) -> Stmt {
    let p = e.provenance.as_ref();
    Stmt {
        sql: INSERT_ITEM,
        params: vec![
            Value::Text(snapshot.into()),
            Value::Int(i64::try_from(position).unwrap_or(i64::MAX)),
            Value::Text(e.id.clone()),
            Value::Text(name(&e.layer)),
            Value::Text(name(&e.section)),
            Value::Text(name(&e.origin)),
            p.map(|p| p.source_kind.clone()).into(),
            p.map(|p| p.reference.clone()).into(),
            p.and_then(|p| p.source_version.clone()).into(),
            p.and_then(|p| p.index_revision.clone()).into(),
            Value::Text(name(&e.trust)),
            e.score.map_or(Value::Null, Value::Real),
            Value::Bool(e.included),
            if e.included {
                Value::Null
            } else {
                Value::Text(e.reason.name().into())
            },
            Value::Text(json(&e.reason)),
            Value::Int(e.tokens.into()),
            Value::Text(name(&e.counted)),
            Value::Bool(e.compressed),
            Value::Bool(e.redacted),
            e.run.as_ref().map(|r| r.last_id.clone()).into(),
            e.run
                .as_ref()
                .map_or(Value::Null, |r| Value::Int(r.count.into())),
        ],
        must_change: false,
    }
}

fn entry(r: &[Value], id: &str) -> Result<SnapshotEntry, StoreError> {
    let at = |i: usize| text(&r[i], id);
    let provenance = match opt_text(&r[4], id)? {
        None => None,
        Some(source_kind) => Some(Provenance {
            source_kind,
            reference: opt_text(&r[5], id)?.unwrap_or_default(),
            source_version: opt_text(&r[6], id)?,
            index_revision: opt_text(&r[7], id)?,
        }),
    };
    let run = match (opt_text(&r[16], id)?, &r[17]) {
        (Some(last_id), count) => Some(Run {
            last_id,
            count: uint(count, id)?,
        }),
        (None, _) => None,
    };
    Ok(SnapshotEntry {
        id: at(0)?,
        layer: unname(&at(1)?, id)?,
        section: unname(&at(2)?, id)?,
        origin: unname(&at(3)?, id)?,
        provenance,
        trust: unname(&at(8)?, id)?,
        score: match &r[9] {
            Value::Null => None,
            Value::Real(f) => Some(*f),
            Value::Int(n) => Some(*n as f64),
            other => return Err(corrupt(id, format!("score {other:?}"))),
        },
        included: boolean(&r[10], id)?,
        reason: parse(&at(11)?, id)?,
        tokens: uint(&r[12], id)?,
        counted: unname(&at(13)?, id)?,
        compressed: boolean(&r[14], id)?,
        redacted: boolean(&r[15], id)?,
        run,
    })
}

/// `value` as JSON text. Serialising the core's types cannot fail (no maps
/// with non-string keys, no failing impls); a failure would be a bug,
/// written as `null` rather than lost silently: reading it back fails.
pub fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// A unit enum's kebab-case name (`o200k-base`, `relevant-knowledge`).
pub fn name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

fn unname<T: DeserializeOwned>(s: &str, id: &str) -> Result<T, StoreError> {
    serde_json::from_value(serde_json::Value::String(s.into()))
        .map_err(|e| corrupt(id, format!("{s:?}: {e}")))
}

fn parse<T: DeserializeOwned>(s: &str, id: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| corrupt(id, e))
}

fn corrupt(id: &str, message: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        snapshot: id.into(),
        message: message.to_string(),
    }
}

fn text(v: &Value, id: &str) -> Result<String, StoreError> {
    match v {
        Value::Text(s) => Ok(s.clone()),
        other => Err(corrupt(id, format!("expected text, found {other:?}"))),
    }
}

fn opt_text(v: &Value, id: &str) -> Result<Option<String>, StoreError> {
    match v {
        Value::Null => Ok(None),
        other => text(other, id).map(Some),
    }
}

fn uint<T: TryFrom<i64>>(v: &Value, id: &str) -> Result<T, StoreError> {
    match v {
        Value::Int(n) => T::try_from(*n).map_err(|_| corrupt(id, format!("{n} out of range"))),
        // PostgreSQL's SUM of BIGINTs is NUMERIC, read as text.
        Value::Text(s) => s
            .parse::<i64>()
            .ok()
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| corrupt(id, format!("{s:?} is not a count"))),
        other => Err(corrupt(id, format!("expected an integer, found {other:?}"))),
    }
}

fn boolean(v: &Value, id: &str) -> Result<bool, StoreError> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Int(n) => Ok(*n != 0),
        other => Err(corrupt(id, format!("expected a boolean, found {other:?}"))),
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
