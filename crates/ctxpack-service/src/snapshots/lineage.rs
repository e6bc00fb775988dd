//! Lineage: which snapshots cite a source that was deleted since, and
//! whether a snapshot's event was written with it.

use super::Store;
use super::engine::{Stmt, StoreError, Value};
use super::row::{Row, corrupt, uint};

impl Store {
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

    /// The sources snapshot `id` cites that were deleted since, each with
    /// when it was recorded.
    pub(crate) async fn deleted_citations(
        &self,
        id: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        const COLUMNS: [&str; 2] = ["source_id", "deleted_at"];
        self.read(
            "SELECT source_id, deleted_at FROM deleted_citations \
             WHERE context_snapshot_id = $1 ORDER BY deleted_at, source_id",
            vec![Value::Text(id.into())],
        )
        .await?
        .iter()
        .map(|d| {
            let d = Row::new(&COLUMNS, d, id);
            Ok((d.text("source_id")?, d.text("deleted_at")?))
        })
        .collect()
    }
}
