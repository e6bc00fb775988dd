//! Index health: which of the service's indexes are degraded now, and
//! why.

use super::engine::{Stmt, StoreError, Value};
use super::row::text;
use super::{Store, now_rfc3339};

impl Store {
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
}
