//! ctxpack for JavaScript, through wasm-bindgen.
//!
//! No logic of its own: the core's JSON face ([`ctxpack_core::json`]) with
//! object keys spelt in camelCase, one string each way per step: what
//! comes in is respelt in one pass over its text ([`spelling`]), what goes
//! out is written camelCase to begin with ([`camel`]). The npm package (`packages/ctxpack`) wraps these classes: it
//! writes the caller's objects as JSON, awaits the caller's callbacks
//! between steps and reads the outcome back.
//!
//! A refusal is thrown as a JavaScript string holding the `ctxpack-error`
//! as JSON (camelCase keys); the package turns it into a `CtxpackError`,
//! naming the field as the caller spelt it.

// Text is cut only by `ctxpack_core::text::cut`, which never panics: a
// panic through the boundary is a trap that kills the instance.
#![cfg_attr(not(test), deny(clippy::string_slice))]
pub mod camel;
pub mod spelling;

use ctxpack_core as ctx;
use ctxpack_core::json::JsonAssembly;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

/// Text handed over as UTF-8 bytes: the package encodes with the
/// engine's native TextEncoder (a string argument would be copied in by
/// wasm-bindgen's JavaScript loop, slow for megabytes of candidates).
fn text<'a>(bytes: &'a [u8], field: &str) -> Result<&'a str, ctx::Error> {
    std::str::from_utf8(bytes).map_err(|e| ctx::Error::invalid(field, e.to_string()))
}

/// A value as camelCase JSON. Writing the core's types does not fail
/// (a non-finite number becomes `null`); were it to, the caller gets the
/// error instead of a panic.
fn written<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, ctx::Error> {
    camel::to_string(value).map_err(|e| ctx::Error::invalid("output", e.to_string()))
}

/// A core error in the caller's spelling, as the value thrown.
fn refusal(error: ctx::Error) -> JsValue {
    JsValue::from_str(&error_json(error))
}

/// The `ctxpack-error` as JSON with camelCase keys.
pub fn error_json(error: ctx::Error) -> String {
    match camel::to_string(&error) {
        Ok(text) => text,
        // Serialising an error of strings and numbers does not fail; were
        // it to, the caller still gets its message.
        Err(_) => serde_json::Value::String(error.to_string()).to_string(),
    }
}

/// A context builder configured from a `BuilderConfig` as JSON (`{}` is
/// every default). Construct it once and reuse it: it keeps the token
/// counts it has made between assemblies.
#[wasm_bindgen]
pub struct Builder(Rc<ctx::Builder>);

#[wasm_bindgen]
impl Builder {
    /// Throws the error naming the field (`config.plan.defaultBudget`).
    #[wasm_bindgen(constructor)]
    pub fn new(config: &[u8]) -> Result<Builder, JsValue> {
        let config = text(config, "config").map_err(refusal)?;
        ctx::json::builder(&spelling::kebab_keys(config))
            .map(|b| Builder(Rc::new(b)))
            .map_err(refusal)
    }

    /// Starts assembling a pack for a request (an `AssembleRequest` as
    /// JSON); a request that does not parse ends at the first step.
    pub fn start(&self, request: &[u8]) -> Result<Assembly, JsValue> {
        let request = text(request, "request").map_err(refusal)?;
        Ok(Assembly::new(JsonAssembly::start(
            Rc::clone(&self.0),
            &spelling::kebab_keys(request),
        )))
    }

    /// Counts a `CountRequest` given as JSON: its `TokenCounts` as JSON.
    /// Throws the error naming the field (`count.texts[0]`).
    pub fn count(&self, request: &[u8]) -> Result<String, JsValue> {
        let request = text(request, "count").map_err(refusal)?;
        let request: ctx::CountRequest =
            ctx::json::parse(&spelling::kebab_keys(request), "count").map_err(refusal)?;
        written(&self.0.count(&request).map_err(refusal)?).map_err(refusal)
    }

    /// Counts texts given apart as their UTF-8 bytes, one after another
    /// (`ends[i]` is where the `i`-th ends), with what a `CountRequest`
    /// given as JSON names (it carries no texts or chat of its own): one
    /// count each.
    #[wasm_bindgen(js_name = countTexts)]
    pub fn count_texts(
        &self,
        request: &[u8],
        texts: &[u8],
        ends: &[u32],
    ) -> Result<Vec<u32>, JsValue> {
        let request = text(request, "count").map_err(refusal)?;
        let request: ctx::CountRequest =
            ctx::json::parse(&spelling::kebab_keys(request), "count").map_err(refusal)?;
        let mut split = Vec::with_capacity(ends.len());
        let mut from = 0usize;
        for (i, &end) in ends.iter().enumerate() {
            let end = end as usize;
            let bytes = texts.get(from..end).ok_or_else(|| {
                refusal(ctx::Error::invalid(
                    format!("texts[{i}]"),
                    "its end is past the bytes given",
                ))
            })?;
            split.push(text(bytes, &format!("texts[{i}]")).map_err(refusal)?);
            from = end;
        }
        self.0.count_texts(&request, &split).map_err(refusal)
    }

    /// Starts trimming a chat (a `TrimRequest` as JSON), step by step: its
    /// steps ask only `countMessages` and `splitText`, and the last is
    /// `{"done": {"trimmed": …}}` or `{"done": {"failed": …}}`.
    pub fn trim(&self, request: &[u8]) -> Result<Assembly, JsValue> {
        let request = text(request, "trim").map_err(refusal)?;
        Ok(Assembly::new(JsonAssembly::trim(
            Rc::clone(&self.0),
            &spelling::kebab_keys(request),
        )))
    }

    /// Starts handling a request: routed first, assembled only when the
    /// route is not a confident one.
    pub fn handle(&self, router: &Router, request: &[u8]) -> Result<Assembly, JsValue> {
        let request = text(request, "request").map_err(refusal)?;
        Ok(Assembly::new(JsonAssembly::handle(
            &router.0,
            Rc::clone(&self.0),
            &spelling::kebab_keys(request),
        )))
    }
}

/// One assembly or handling, driven step by step.
#[wasm_bindgen]
pub struct Assembly {
    steps: JsonAssembly,
    /// The outcome's snapshot, when it was written apart.
    snapshot: Option<String>,
}

impl Assembly {
    fn new(steps: JsonAssembly) -> Self {
        Assembly {
            steps,
            snapshot: None,
        }
    }
}

#[wasm_bindgen]
impl Assembly {
    /// Answers the step asked last (empty: nothing) and gives the next
    /// one, as JSON. A refused answer throws and changes nothing. With
    /// `apart`, the outcome's snapshot is written apart, `null` in its
    /// place, and [`snapshot`](Self::snapshot) gives it.
    pub fn step(&mut self, answer: &[u8], apart: bool) -> Result<String, JsValue> {
        let answer = text(answer, "answer").map_err(refusal)?;
        let answer = (!answer.is_empty()).then(|| spelling::kebab_keys(answer));
        let snapshot = &mut self.snapshot;
        self.steps
            .step_with(answer.as_deref(), |step| {
                if !apart {
                    return written(step);
                }
                let (text, apart) = camel::to_string_apart(step)
                    .map_err(|e| ctx::Error::invalid("output", e.to_string()))?;
                *snapshot = apart;
                Ok(text)
            })
            .map_err(refusal)
    }

    /// The snapshot the last step wrote apart, as JSON, once.
    pub fn snapshot(&mut self) -> Option<String> {
        self.snapshot.take()
    }
}

/// A router, compiled once from its YAML or JSON configuration.
#[wasm_bindgen]
pub struct Router(ctx::Router);

#[wasm_bindgen]
impl Router {
    /// `format` is `"yaml"` or `"json"`. The configuration keeps the WIT's
    /// spelling (it is a file, as the router's documentation writes it).
    #[wasm_bindgen(constructor)]
    pub fn new(config: &str, format: &str) -> Result<Router, JsValue> {
        let format = match format {
            "yaml" => ctx::ConfigFormat::Yaml,
            "json" => ctx::ConfigFormat::Json,
            other => {
                return Err(refusal(ctx::Error::invalid(
                    "format",
                    format!("expected \"yaml\" or \"json\", got {other:?}"),
                )));
            }
        };
        ctx::Router::from_text(config, format)
            .map(Router)
            .map_err(refusal)
    }

    /// The routing decision on a raw query, as JSON.
    pub fn route(&self, query: &str) -> Result<String, JsValue> {
        written(&self.0.route(query)).map_err(refusal)
    }
}

/// What changed between two snapshots given as JSON, as JSON.
#[wasm_bindgen(js_name = diffSnapshots)]
pub fn diff_snapshots(before: &[u8], after: &[u8]) -> Result<String, JsValue> {
    let before = text(before, "before").map_err(refusal)?;
    let after = text(after, "after").map_err(refusal)?;
    let before: ctx::Snapshot =
        ctx::json::parse(&spelling::kebab_keys(before), "before").map_err(refusal)?;
    let after: ctx::Snapshot =
        ctx::json::parse(&spelling::kebab_keys(after), "after").map_err(refusal)?;
    written(&ctx::diff(&before, &after)).map_err(refusal)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_error_is_thrown_as_json_with_camel_case_keys() {
        let text = error_json(ctx::Error::invalid("request.keep-last", "expected u32"));
        assert_eq!(
            text,
            r#"{"invalidField":{"field":"request.keep-last","message":"expected u32"}}"#
        );
    }
}
