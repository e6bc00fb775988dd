//! The `ContextAssembled` outbox: events written with their snapshots,
//! relayed to the broker by whichever replica claims them.

use super::engine::{BoxFuture, StoreError, Value};
use super::row::text;
use super::{Store, now_rfc3339};

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

impl Store {
    /// Relays up to `limit` waiting events through `publish` (see
    /// [`super::Engine::relay`]).
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
}
