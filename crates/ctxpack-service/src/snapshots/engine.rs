//! The one trait a database implements for the store — a transaction of
//! statements, a query — and the values and errors that cross it.

use super::outbox::Publish;
use std::future::Future;
use std::pin::Pin;

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

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
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
    /// The artifact store failed, or lacks an object a row refers to.
    #[error("artifact store: {0}")]
    Artifacts(String),
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
    /// Runs migration `version`, one held back from opening until the
    /// store's own part is done (the contents moved to the artifact store),
    /// and records it — unless it is recorded already; on PostgreSQL one
    /// replica at a time.
    fn late_migration(&self, version: i64) -> BoxFuture<'_, Result<(), StoreError>>;
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
