//! Every answer a test's client receives, held to the service's OpenAPI
//! document: its path and method described, its status one the operation
//! lists, its body valid against the schema the document gives it. A test
//! that receives an answer the document does not describe fails.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use ctxpack_service::client::Answer;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Holds every answer of this process's clients to the document (once
/// called, for the rest of the process).
pub fn hold_answers() {
    ctxpack_service::client::observe_answers(check);
}

fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(ctxpack_service::openapi::document)
}

/// The validator of `schema` (a schema of the document, its references
/// resolved in the document).
fn valid(schema: &Value, body: &Value) -> Result<(), String> {
    static CACHE: OnceLock<Mutex<HashMap<String, jsonschema::Validator>>> = OnceLock::new();
    let key = schema.to_string();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    let validator = cache.entry(key).or_insert_with(|| {
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "allOf": [schema],
            "components": document()["components"],
        });
        jsonschema::draft202012::new(&root).expect("the document's schemas compile")
    });
    let errors: Vec<String> = validator
        .iter_errors(body)
        .take(5)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// The document's path template `path` matches, if any.
pub fn template(path: &str) -> Option<&'static str> {
    let path = path.split('?').next().unwrap_or(path);
    let segments: Vec<&str> = path.split('/').collect();
    document()["paths"].as_object()?.keys().find_map(|t| {
        let ts: Vec<&str> = t.split('/').collect();
        let same = ts.len() == segments.len()
            && ts
                .iter()
                .zip(&segments)
                .all(|(t, s)| (t.starts_with('{') && !s.is_empty()) || t == s);
        same.then_some(t.as_str())
    })
}

/// Checks `answer` to `method path` against the document; panics, saying
/// what differs, when it is not described.
pub fn check(method: &str, path: &str, answer: &Answer) {
    if let Err(why) = described(method, path, answer) {
        panic!(
            "{method} {path} answered {} not as the OpenAPI document says: {why}\nbody: {}",
            answer.status,
            String::from_utf8_lossy(&answer.body[..answer.body.len().min(600)])
        );
    }
}

fn described(method: &str, path: &str, answer: &Answer) -> Result<(), String> {
    let error = || json!({"$ref": "#/components/schemas/Error"});
    let json_body =
        || serde_json::from_slice::<Value>(&answer.body).map_err(|e| format!("not JSON: {e}"));
    // The listener refused the connection's request before routing (a
    // connection over its client's cap, a body too slow): an error, JSON
    // when it has a body.
    let refused_early = |answer: &Answer| -> Result<(), String> {
        if answer.body.is_empty() {
            return Ok(());
        }
        valid(&error(), &json_body()?)
    };
    let Some(t) = template(path) else {
        // A route that is not the API's: 404 (or 405), as an error.
        if ![404, 405, 503].contains(&answer.status) {
            return Err("the path is not described".into());
        }
        return refused_early(answer);
    };
    let Some(op) = document()["paths"][t].get(method.to_lowercase()) else {
        if ![405, 404, 503].contains(&answer.status) {
            return Err(format!("{method} is not described for {t}"));
        }
        return refused_early(answer);
    };
    let status = answer.status.to_string();
    let Some(response) = op["responses"]
        .get(&status)
        .or_else(|| op["responses"].get("default"))
    else {
        return Err(format!(
            "status {status} is not among the operation's answers"
        ));
    };
    let Some(content) = response.get("content").and_then(Value::as_object) else {
        return Ok(());
    };
    let media = answer
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_owned();
    let Some(described) = content.get(&media) else {
        return Err(format!(
            "content type {media:?}, the document gives {:?}",
            content.keys().collect::<Vec<_>>()
        ));
    };
    if media == "application/json" {
        valid(&described["schema"], &json_body()?)
    } else {
        std::str::from_utf8(&answer.body)
            .map(drop)
            .map_err(|e| format!("not text: {e}"))
    }
}

/// Whether `body` is valid against the document's schema `name`: the
/// errors when it is not.
pub fn valid_as(name: &str, body: &Value) -> Result<(), String> {
    valid(
        &json!({"$ref": format!("#/components/schemas/{name}")}),
        body,
    )
}
