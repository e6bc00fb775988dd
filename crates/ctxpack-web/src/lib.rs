//! ctxpack for JavaScript, through wasm-bindgen.
//!
//! No logic of its own: the core's JSON face ([`ctxpack_core::json`]) with
//! object keys spelt in camelCase ([`spelling`]), one string each way per
//! step. The npm package (`packages/ctxpack`) wraps these classes: it
//! writes the caller's objects as JSON, awaits the caller's callbacks
//! between steps and reads the outcome back.
//!
//! A refusal is thrown as a JavaScript string holding the `ctxpack-error`
//! as JSON (camelCase keys); the package turns it into a `CtxpackError`,
//! naming the field as the caller spelt it.

pub mod spelling;

use ctxpack_core as ctx;
use ctxpack_core::json::JsonAssembly;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

/// A core error in the caller's spelling, as the value thrown.
fn refusal(error: ctx::Error) -> JsValue {
    JsValue::from_str(&error_json(error))
}

/// The `ctxpack-error` as JSON with camelCase keys.
pub fn error_json(error: ctx::Error) -> String {
    match serde_json::to_string(&error) {
        Ok(text) => spelling::camel_keys(&text),
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
    pub fn new(config: &str) -> Result<Builder, JsValue> {
        ctx::json::builder(&spelling::kebab_keys(config))
            .map(|b| Builder(Rc::new(b)))
            .map_err(refusal)
    }

    /// Starts assembling a pack for a request (an `AssembleRequest` as
    /// JSON); a request that does not parse ends at the first step.
    pub fn start(&self, request: &str) -> Assembly {
        Assembly(JsonAssembly::start(
            Rc::clone(&self.0),
            &spelling::kebab_keys(request),
        ))
    }

    /// Starts handling a request: routed first, assembled only when the
    /// route is not a confident one.
    pub fn handle(&self, router: &Router, request: &str) -> Assembly {
        Assembly(JsonAssembly::handle(
            &router.0,
            Rc::clone(&self.0),
            &spelling::kebab_keys(request),
        ))
    }
}

/// One assembly or handling, driven step by step.
#[wasm_bindgen]
pub struct Assembly(JsonAssembly);

#[wasm_bindgen]
impl Assembly {
    /// Answers the step asked last (`""`: nothing) and gives the next one,
    /// as JSON. A refused answer throws and changes nothing.
    pub fn step(&mut self, answer: &str) -> Result<String, JsValue> {
        let answer = (!answer.is_empty()).then(|| spelling::kebab_keys(answer));
        self.0
            .step(answer.as_deref())
            .map(|step| spelling::camel_keys(&step))
            .map_err(refusal)
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
        ctx::json::route(&self.0, query)
            .map(|d| spelling::camel_keys(&d))
            .map_err(refusal)
    }
}

/// What changed between two snapshots given as JSON, as JSON.
#[wasm_bindgen(js_name = diffSnapshots)]
pub fn diff_snapshots(before: &str, after: &str) -> Result<String, JsValue> {
    ctx::json::diff(&spelling::kebab_keys(before), &spelling::kebab_keys(after))
        .map(|d| spelling::camel_keys(&d))
        .map_err(refusal)
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
