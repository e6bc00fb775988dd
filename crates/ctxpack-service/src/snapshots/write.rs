//! Writing an assembly's record: its content and plan by hash in the
//! artifact store first, then the references, the snapshot row, its items
//! and its event, in one transaction.

use super::Store;
use super::engine::{Committed, Stmt, StoreError, Value};
use super::outbox::TOPIC;
use super::row::{Named, Row, Sql, corrupt, insert, json, name};
use ctxpack_core::{CompressionMetadata, ContextAssembled, Snapshot, SnapshotEntry};

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

static INSERT_CONTENT: Sql = Sql::new();
static INSERT_SNAPSHOT: Sql = Sql::new();
static INSERT_ITEM: Sql = Sql::new();
static INSERT_EVENT: Sql = Sql::new();

impl Store {
    /// Records `record`: its content and plan by hash in the artifact
    /// store (fail-fast: an object store that does not take them fails the
    /// record, and nothing is written), then their references, the
    /// snapshot row, its items and its event, in one transaction. An
    /// attempt that has a snapshot already is not written again.
    pub async fn record(&self, record: &Record) -> Result<Recorded, StoreError> {
        let s = &record.snapshot;
        let plan = json(&s.plan);
        let plan_hash = ctxpack_core::text_hash(&plan);
        if ctxpack_core::text_hash(&record.text) != s.content_hash {
            return Err(corrupt(&s.id, "the text is not the snapshot's content"));
        }
        if let Some(why) = self.corrupt() {
            return Err(StoreError::Database(format!(
                "the store is corrupt ({why}): nothing more is written to it; \
                 restore it and restart"
            )));
        }
        let (p, c) = futures_util::future::join(
            self.artifacts.put(&plan_hash, &plan),
            self.artifacts.put(&s.content_hash, &record.text),
        )
        .await;
        p.and(c)?;
        let mut stmts = vec![
            reference_stmt(&plan_hash, "plan"),
            reference_stmt(&s.content_hash, "context"),
            named(
                &INSERT_SNAPSHOT,
                "context_snapshots",
                snapshot_row(record, plan_hash),
                "ON CONFLICT DO NOTHING",
                true,
            ),
        ];
        for (position, e) in s.entries.iter().enumerate() {
            stmts.push(named(
                &INSERT_ITEM,
                "context_items",
                item_row(&s.id, position, e),
                "",
                false,
            ));
        }
        let event = Named(vec![
            ("event_id", Value::Text(s.id.clone())),
            ("topic", Value::Text(TOPIC.into())),
            ("tenant_id", s.tenant_id.clone().unwrap_or_default().into()),
            ("payload", Value::Text(json(&record.event))),
            ("created_at", Value::Text(record.assembled_at.clone())),
        ]);
        stmts.push(named(&INSERT_EVENT, "context_outbox", event, "", false));
        match self
            .engine
            .transaction(stmts)
            .await
            .map_err(|e| self.noticed(e))?
        {
            Committed::Yes => Ok(Recorded::New),
            Committed::Conflict => self.recorded_before(record).await,
        }
    }

    /// What the attempt of `record`, which has a snapshot already, holds:
    /// this very snapshot (a retry) or another.
    async fn recorded_before(&self, record: &Record) -> Result<Recorded, StoreError> {
        let s = &record.snapshot;
        const COLUMNS: [&str; 2] = ["context_snapshot_id", "request_hash"];
        let rows = self
            .read(
                "SELECT context_snapshot_id, request_hash FROM context_snapshots \
                 WHERE tenant_id = $1 AND run_id = $2 AND attempt_id = $3",
                vec![
                    s.tenant_id.clone().unwrap_or_default().into(),
                    s.run_id.clone().unwrap_or_default().into(),
                    s.attempt_id.clone().unwrap_or_default().into(),
                ],
            )
            .await?;
        let existing = rows
            .first()
            .map(|r| {
                let r = Row::new(&COLUMNS, r, &s.id);
                Ok::<_, StoreError>((r.text("context_snapshot_id")?, r.opt_text("request_hash")?))
            })
            .transpose()?;
        match existing {
            // A row from before request hashes replays as before.
            Some((id, hash))
                if id == s.id && hash.as_ref().is_none_or(|h| *h == record.request_hash) =>
            {
                Ok(Recorded::Replayed)
            }
            Some((id, _)) => Ok(Recorded::AttemptTaken(id)),
            // The same id under another attempt cannot be: the id hashes
            // the attempt.
            None => Err(StoreError::Database(format!(
                "snapshot {} conflicts with a row that is not its attempt's",
                s.id
            ))),
        }
    }
}

/// The statement writing `row` into `table` (its SQL written once, in
/// `sql`, from the row's column names).
fn named(sql: &'static Sql, table: &str, row: Named, tail: &str, must_change: bool) -> Stmt {
    let sql = sql.get(|| insert(table, &row.columns(), tail));
    Stmt {
        sql,
        params: row.values(),
        must_change,
    }
}

/// The reference to an object of the artifact store: its hash and kind
/// (`plan` or `context`).
fn reference_stmt(hash: &str, kind: &str) -> Stmt {
    let row = Named(vec![
        ("content_hash", Value::Text(hash.into())),
        ("kind", Value::Text(kind.into())),
    ]);
    named(
        &INSERT_CONTENT,
        "context_artifacts",
        row,
        "ON CONFLICT DO NOTHING",
        false,
    )
}

/// The snapshot's row of `context_snapshots`; its plan is stored by
/// `plan_hash`.
fn snapshot_row(record: &Record, plan_hash: String) -> Named {
    let s = &record.snapshot;
    Named(vec![
        ("context_snapshot_id", Value::Text(s.id.clone())),
        ("tenant_id", s.tenant_id.clone().unwrap_or_default().into()),
        ("project_id", s.project_id.clone().into()),
        ("run_id", s.run_id.clone().unwrap_or_default().into()),
        (
            "attempt_id",
            s.attempt_id.clone().unwrap_or_default().into(),
        ),
        ("plan_ref", Value::Text(plan_hash)),
        ("token_budget", Value::Int(s.token_budget.into())),
        ("tokens_used", Value::Int(s.tokens_used.into())),
        ("status", Value::Text(json(&s.status))),
        ("index_revisions", Value::Text(json(&s.index_revisions))),
        ("memory_items", Value::Text(json(&s.memory_items))),
        ("content_ref", Value::Text(s.content_hash.clone())),
        ("assembled_at", Value::Text(record.assembled_at.clone())),
        ("failure", s.failure.clone().into()),
        ("session_id", record.session_id.clone().into()),
        ("trace_id", Value::Text(record.trace_id.clone())),
        ("scopes", Value::Text(json(&s.scopes))),
        ("tokenizer", Value::Text(json(&s.tokenizer))),
        ("model", s.model.as_ref().map(json).into()),
        ("text_tokens", Value::Int(s.text_tokens.into())),
        ("message_tokens", Value::Int(s.message_tokens.into())),
        (
            "stable_prefix_tokens",
            Value::Int(s.stable_prefix_tokens.into()),
        ),
        ("cache_prefixes", Value::Text(json(&s.cache_prefixes))),
        ("profile", Value::Text(json(&s.profile))),
        ("source_calls", Value::Text(json(&s.source_calls))),
        ("compression", Value::Text(json(&record.compression))),
        ("compressions", Value::Text(json(&s.compressions))),
        ("request_hash", Value::Text(record.request_hash.clone())),
        ("user_id", record.user_id.clone().into()),
        ("fence", Value::Text(json(&s.fence))),
        (
            "chat",
            s.chat
                .as_ref()
                .map_or(Value::Null, |c| Value::Text(json(c))),
        ),
    ])
}

/// Entry `e`'s row of `context_items`, at `position` in the snapshot.
fn item_row(snapshot: &str, position: usize, e: &SnapshotEntry) -> Named {
    let p = e.provenance.as_ref();
    let reason = (!e.included).then(|| e.reason.name().to_owned());
    Named(vec![
        ("context_snapshot_id", Value::Text(snapshot.into())),
        (
            "position",
            Value::Int(i64::try_from(position).unwrap_or(i64::MAX)),
        ),
        ("item_id", Value::Text(e.id.clone())),
        ("layer", Value::Text(name(&e.layer))),
        ("section", Value::Text(name(&e.section))),
        ("origin", Value::Text(name(&e.origin))),
        ("source_kind", p.map(|p| p.source_kind.clone()).into()),
        ("reference", p.map(|p| p.reference.clone()).into()),
        (
            "source_version",
            p.and_then(|p| p.source_version.clone()).into(),
        ),
        (
            "index_revision",
            p.and_then(|p| p.index_revision.clone()).into(),
        ),
        ("trust_tier", Value::Text(name(&e.trust))),
        ("score", e.score.map_or(Value::Null, Value::Real)),
        ("included", Value::Bool(e.included)),
        ("drop_reason", reason.into()),
        ("reason", Value::Text(json(&e.reason))),
        ("tokens", Value::Int(e.tokens.into())),
        ("counted", Value::Text(name(&e.counted))),
        ("compressed", Value::Bool(e.compressed)),
        ("redacted", Value::Bool(e.redacted)),
        (
            "run_last_id",
            e.run.as_ref().map(|r| r.last_id.clone()).into(),
        ),
        (
            "run_count",
            e.run
                .as_ref()
                .map_or(Value::Null, |r| Value::Int(r.count.into())),
        ),
    ])
}
