//! Rows by column name: a statement's columns are named once, next to the
//! values written to them or read from them, and its SQL is written from
//! those names — no value is found by its position.

use super::engine::{StoreError, Value};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::sync::OnceLock;

/// The SQL of a statement written from its column names once, the first
/// time it is wanted (the engines take `&'static str`).
pub(crate) struct Sql(OnceLock<String>);

impl Sql {
    /// A statement not yet written.
    pub const fn new() -> Self {
        Sql(OnceLock::new())
    }

    /// The statement, written by `write` the first time.
    pub fn get(&'static self, write: impl FnOnce() -> String) -> &'static str {
        self.0.get_or_init(write)
    }
}

/// `INSERT INTO table (a, b, …) VALUES ($1, $2, …) tail`.
pub(crate) fn insert(table: &str, columns: &[&str], tail: &str) -> String {
    let places: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
    format!(
        "INSERT INTO {table} ({}) VALUES ({}) {tail}",
        columns.join(", "),
        places.join(", ")
    )
    .trim_end()
    .to_owned()
}

/// A row to write: each value beside its column's name.
pub(crate) struct Named(pub Vec<(&'static str, Value)>);

impl Named {
    /// The columns' names, in order.
    pub fn columns(&self) -> Vec<&'static str> {
        self.0.iter().map(|(c, _)| *c).collect()
    }

    /// The values, in the columns' order.
    pub fn values(self) -> Vec<Value> {
        self.0.into_iter().map(|(_, v)| v).collect()
    }
}

/// One row a query answered, read by column name; what it cannot read is
/// the snapshot `id`'s corruption.
pub(crate) struct Row<'a> {
    columns: &'a [&'a str],
    values: &'a [Value],
    id: &'a str,
}

impl<'a> Row<'a> {
    /// `values`, the answer to a query that selected `columns`, of the
    /// snapshot (or table) `id`.
    pub fn new(columns: &'a [&'a str], values: &'a [Value], id: &'a str) -> Self {
        Row {
            columns,
            values,
            id,
        }
    }

    /// The value of `column`.
    pub fn value(&self, column: &str) -> Result<&'a Value, StoreError> {
        let values = self.values;
        self.columns
            .iter()
            .position(|c| *c == column)
            .and_then(|i| values.get(i))
            .ok_or_else(|| corrupt(self.id, format!("no column {column}")))
    }

    /// `column` as text.
    pub fn text(&self, column: &str) -> Result<String, StoreError> {
        text(self.value(column)?, self.id)
    }

    /// `column` as text, or NULL.
    pub fn opt_text(&self, column: &str) -> Result<Option<String>, StoreError> {
        opt_text(self.value(column)?, self.id)
    }

    /// `column` as a count.
    pub fn uint<T: TryFrom<i64>>(&self, column: &str) -> Result<T, StoreError> {
        uint(self.value(column)?, self.id)
    }

    /// `column` as a boolean.
    pub fn boolean(&self, column: &str) -> Result<bool, StoreError> {
        boolean(self.value(column)?, self.id)
    }

    /// `column` as a number, or NULL.
    pub fn opt_real(&self, column: &str) -> Result<Option<f64>, StoreError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Real(f) => Ok(Some(*f)),
            Value::Int(n) => Ok(Some(*n as f64)),
            other => Err(corrupt(self.id, format!("{column} {other:?}"))),
        }
    }

    /// `column`, JSON text, read as a `T`.
    pub fn parse<T: DeserializeOwned>(&self, column: &str) -> Result<T, StoreError> {
        parse(&self.text(column)?, self.id)
    }

    /// `column`, JSON text or NULL, read as a `T` or none.
    pub fn opt_parse<T: DeserializeOwned>(&self, column: &str) -> Result<Option<T>, StoreError> {
        self.opt_text(column)?
            .map(|text| parse(&text, self.id))
            .transpose()
    }

    /// `column`, a unit enum's name, read as a `T`.
    pub fn unname<T: DeserializeOwned>(&self, column: &str) -> Result<T, StoreError> {
        let s = self.text(column)?;
        serde_json::from_value(serde_json::Value::String(s.clone()))
            .map_err(|e| corrupt(self.id, format!("{column} {s:?}: {e}")))
    }
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

pub(crate) fn parse<T: DeserializeOwned>(s: &str, id: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| corrupt(id, e))
}

pub(crate) fn corrupt(id: &str, message: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        snapshot: id.into(),
        message: message.to_string(),
    }
}

pub(crate) fn text(v: &Value, id: &str) -> Result<String, StoreError> {
    match v {
        Value::Text(s) => Ok(s.clone()),
        other => Err(corrupt(id, format!("expected text, found {other:?}"))),
    }
}

pub(crate) fn opt_text(v: &Value, id: &str) -> Result<Option<String>, StoreError> {
    match v {
        Value::Null => Ok(None),
        other => text(other, id).map(Some),
    }
}

pub(crate) fn uint<T: TryFrom<i64>>(v: &Value, id: &str) -> Result<T, StoreError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_read_by_name_and_an_unknown_column_is_named() {
        let columns = ["a", "b", "c"];
        let values = [Value::Text("x".into()), Value::Int(7), Value::Null];
        let row = Row::new(&columns, &values, "s1");
        assert_eq!(row.text("a").unwrap(), "x");
        assert_eq!(row.uint::<u32>("b").unwrap(), 7);
        assert_eq!(row.opt_text("c").unwrap(), None);
        let e = row.text("d").unwrap_err().to_string();
        assert!(e.contains("s1") && e.contains("no column d"), "{e}");
        assert!(row.text("b").is_err());
    }

    #[test]
    fn an_insert_is_written_from_its_columns() {
        assert_eq!(
            insert("t", &["a", "b"], "ON CONFLICT DO NOTHING"),
            "INSERT INTO t (a, b) VALUES ($1, $2) ON CONFLICT DO NOTHING"
        );
        assert_eq!(insert("t", &["a"], ""), "INSERT INTO t (a) VALUES ($1)");
    }
}
