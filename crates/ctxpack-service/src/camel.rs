//! The seed's JSON is camelCase; the core's is kebab-case (the WIT's
//! names). What the service writes in the seed's shape — the snapshot
//! detail over HTTP, the events on NATS — is renamed here.

use serde_json::Value;

/// `kebab-case` -> `camelCase`.
fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut up = false;
    for c in key.chars() {
        if c == '-' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Every object key of `v` in camelCase; values as they are.
pub fn camel_keys(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (camel(&k), camel_keys(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(camel_keys).collect()),
        other => other,
    }
}
