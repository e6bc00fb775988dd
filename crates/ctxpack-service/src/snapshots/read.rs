//! Reading snapshots back: a run's list, one snapshot whole or a page of
//! its items, the content they reference.

use super::Store;
use super::engine::{StoreError, Value};
use super::row::{Row, Sql, text};
use ctxpack_core::{CompressionMetadata, Provenance, Run, Snapshot, SnapshotEntry};
use serde::Serialize;

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

/// The columns of `context_snapshots` a snapshot is read back from.
const SNAPSHOT: [&str; 29] = [
    "context_snapshot_id",
    "tenant_id",
    "project_id",
    "run_id",
    "attempt_id",
    "plan_ref",
    "token_budget",
    "tokens_used",
    "status",
    "index_revisions",
    "memory_items",
    "content_ref",
    "assembled_at",
    "failure",
    "session_id",
    "trace_id",
    "scopes",
    "tokenizer",
    "model",
    "text_tokens",
    "message_tokens",
    "stable_prefix_tokens",
    "cache_prefixes",
    "profile",
    "source_calls",
    "compression",
    "compressions",
    "fence",
    "chat",
];

/// The columns of `context_items` an entry is read back from.
const ITEM: [&str; 18] = [
    "item_id",
    "layer",
    "section",
    "origin",
    "source_kind",
    "reference",
    "source_version",
    "index_revision",
    "trust_tier",
    "score",
    "included",
    "reason",
    "tokens",
    "counted",
    "compressed",
    "redacted",
    "run_last_id",
    "run_count",
];

/// The columns of a run's list: the snapshot's own, then what its items
/// count (`included`, `dropped`).
const SUMMARY: [&str; 12] = [
    "context_snapshot_id",
    "project_id",
    "run_id",
    "attempt_id",
    "status",
    "token_budget",
    "tokens_used",
    "content_ref",
    "assembled_at",
    "failure",
    "included",
    "dropped",
];

static SNAPSHOT_BY_ID: Sql = Sql::new();
static ITEMS_PAGE: Sql = Sql::new();
static LIST_PAGE: Sql = Sql::new();

impl Store {
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
        let sql = LIST_PAGE.get(|| {
            let own: Vec<String> = SUMMARY[..10].iter().map(|c| format!("s.{c}")).collect();
            format!(
                "SELECT {}, \
                 (SELECT COUNT(*) FROM context_items i WHERE i.context_snapshot_id = \
                 s.context_snapshot_id AND i.included) AS included, \
                 (SELECT CAST(COALESCE(SUM(COALESCE(i.run_count, 1)), 0) AS BIGINT) \
                 FROM context_items i WHERE i.context_snapshot_id = s.context_snapshot_id \
                 AND NOT i.included) AS dropped \
                 FROM context_snapshots s WHERE s.tenant_id = $1 AND s.run_id = $2 \
                 AND ($3 = '' OR (s.assembled_at, s.context_snapshot_id) > \
                 (SELECT a.assembled_at, a.context_snapshot_id FROM context_snapshots a \
                 WHERE a.context_snapshot_id = $3 AND a.tenant_id = $1)) \
                 ORDER BY s.assembled_at, s.context_snapshot_id LIMIT $4",
                own.join(", ")
            )
        });
        let params = vec![
            Value::Text(tenant.into()),
            Value::Text(run_id.into()),
            Value::Text(after.unwrap_or("").into()),
            Value::Int(i64::try_from(limit).unwrap_or(i64::MAX)),
        ];
        let rows = self.read(sql, params).await?;
        rows.iter()
            .map(|r| {
                let id = text(r.first().unwrap_or(&Value::Null), "?")?;
                let r = Row::new(&SUMMARY, r, &id);
                Ok(Summary {
                    project_id: r.opt_text("project_id")?,
                    run_id: r.text("run_id")?,
                    attempt_id: r.text("attempt_id")?,
                    status: r.parse("status")?,
                    token_budget: r.uint("token_budget")?,
                    tokens_used: r.uint("tokens_used")?,
                    content_ref: format!("sha256:{}", r.text("content_ref")?),
                    assembled_at: r.text("assembled_at")?,
                    failure: r.opt_text("failure")?,
                    included: r.uint("included")?,
                    dropped: r.uint("dropped")?,
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
        let sql = SNAPSHOT_BY_ID.get(|| {
            format!(
                "SELECT {} FROM context_snapshots \
                 WHERE context_snapshot_id = $1 AND tenant_id = $2",
                SNAPSHOT.join(", ")
            )
        });
        let params = vec![Value::Text(id.into()), Value::Text(tenant.into())];
        let rows = self.read(sql, params).await?;
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        let r = Row::new(&SNAPSHOT, r, id);
        let plan_ref = r.text("plan_ref")?;
        let plan = self
            .content(&plan_ref)
            .await?
            .ok_or_else(|| lost(id, &plan_ref))?;
        let snapshot = Snapshot {
            id: r.text("context_snapshot_id")?,
            tenant_id: Some(r.text("tenant_id")?),
            project_id: r.opt_text("project_id")?,
            run_id: Some(r.text("run_id")?),
            attempt_id: Some(r.text("attempt_id")?),
            scopes: r.parse("scopes")?,
            tokenizer: r.parse("tokenizer")?,
            model: r.opt_parse("model")?,
            token_budget: r.uint("token_budget")?,
            tokens_used: r.uint("tokens_used")?,
            text_tokens: r.uint("text_tokens")?,
            message_tokens: r.uint("message_tokens")?,
            stable_prefix_tokens: r.uint("stable_prefix_tokens")?,
            cache_prefixes: r.parse("cache_prefixes")?,
            content_hash: r.text("content_ref")?,
            index_revisions: r.parse("index_revisions")?,
            memory_items: r.parse("memory_items")?,
            status: r.parse("status")?,
            failure: r.opt_text("failure")?,
            profile: r.parse("profile")?,
            plan: super::row::parse(&plan, id)?,
            source_calls: r.parse("source_calls")?,
            compressions: r.parse("compressions")?,
            fence: r.parse("fence")?,
            chat: r.opt_parse("chat")?,
            entries: self.entries(id, offset, limit).await?,
        };
        Ok(Some(Detail {
            snapshot,
            compression: r.parse("compression")?,
            assembled_at: r.text("assembled_at")?,
            session_id: r.opt_text("session_id")?,
            trace_id: r.opt_text("trace_id")?,
            deleted_citations: self.deleted_citations(id).await?,
            items_total: self
                .count(
                    "SELECT COUNT(*) FROM context_items WHERE context_snapshot_id = $1",
                    vec![Value::Text(id.into())],
                )
                .await?,
            items_offset: offset,
        }))
    }

    /// `limit` of snapshot `id`'s entries from `offset`, in their order.
    async fn entries(
        &self,
        id: &str,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<SnapshotEntry>, StoreError> {
        let sql = ITEMS_PAGE.get(|| {
            format!(
                "SELECT {} FROM context_items WHERE context_snapshot_id = $1 \
                 ORDER BY position LIMIT $2 OFFSET $3",
                ITEM.join(", ")
            )
        });
        let params = vec![
            Value::Text(id.into()),
            Value::Int(i64::try_from(limit).unwrap_or(i64::MAX)),
            Value::Int(i64::try_from(offset).unwrap_or(i64::MAX)),
        ];
        let rows = self.read(sql, params).await?;
        rows.iter()
            .map(|r| entry(&Row::new(&ITEM, r, id)))
            .collect()
    }

    /// The stored body with hash `hash` (hex), from the artifact store.
    pub async fn content(&self, hash: &str) -> Result<Option<String>, StoreError> {
        self.artifacts.get(hash).await
    }

    /// The hash of the assembled text of `tenant`'s snapshot `id`; `None`
    /// when the tenant has no such snapshot.
    async fn content_ref(&self, tenant: &str, id: &str) -> Result<Option<String>, StoreError> {
        let rows = self
            .read(
                "SELECT content_ref FROM context_snapshots \
                 WHERE context_snapshot_id = $1 AND tenant_id = $2",
                vec![Value::Text(id.into()), Value::Text(tenant.into())],
            )
            .await?;
        rows.first()
            .and_then(|r| r.first())
            .map(|v| text(v, id))
            .transpose()
    }

    /// The size in bytes of the assembled text of `tenant`'s snapshot
    /// `id`; `None` when the tenant has no such snapshot.
    pub async fn content_size(&self, tenant: &str, id: &str) -> Result<Option<u64>, StoreError> {
        let Some(hash) = self.content_ref(tenant, id).await? else {
            return Ok(None);
        };
        let size = self.artifacts.size(&hash).await?;
        size.map(Some).ok_or_else(|| lost(id, &hash))
    }

    /// The assembled text of `tenant`'s snapshot `id`; `None` when the
    /// tenant has no such snapshot.
    pub async fn content_of(&self, tenant: &str, id: &str) -> Result<Option<String>, StoreError> {
        let Some(hash) = self.content_ref(tenant, id).await? else {
            return Ok(None);
        };
        let body = self.artifacts.get(&hash).await?;
        body.map(Some).ok_or_else(|| lost(id, &hash))
    }
}

/// A snapshot's object that the artifact store does not have: the store
/// cannot read back what it wrote (not a passing fault).
fn lost(id: &str, hash: &str) -> StoreError {
    StoreError::Corrupt {
        snapshot: id.to_owned(),
        message: format!("object {hash} is not in the artifact store"),
    }
}

/// One row of `context_items` as the snapshot's entry.
fn entry(r: &Row) -> Result<SnapshotEntry, StoreError> {
    let provenance = match r.opt_text("source_kind")? {
        None => None,
        Some(source_kind) => Some(Provenance {
            source_kind,
            reference: r.opt_text("reference")?.unwrap_or_default(),
            source_version: r.opt_text("source_version")?,
            index_revision: r.opt_text("index_revision")?,
        }),
    };
    let run = match r.opt_text("run_last_id")? {
        Some(last_id) => Some(Run {
            last_id,
            count: r.uint("run_count")?,
        }),
        None => None,
    };
    Ok(SnapshotEntry {
        id: r.text("item_id")?,
        layer: r.unname("layer")?,
        section: r.unname("section")?,
        origin: r.unname("origin")?,
        provenance,
        trust: r.unname("trust_tier")?,
        score: r.opt_real("score")?,
        included: r.boolean("included")?,
        reason: r.parse("reason")?,
        tokens: r.uint("tokens")?,
        counted: r.unname("counted")?,
        compressed: r.boolean("compressed")?,
        redacted: r.boolean("redacted")?,
        run,
    })
}
