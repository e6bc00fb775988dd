//! Scenario files: a request, the builder's configuration and what the
//! host's stores answer, in one JSON document.

use crate::stores::HostAnswers;
use ctxpack_core::{AssembleRequest, BuilderConfig, ContextPack};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Scenario {
    /// What the scenario shows.
    pub description: String,
    /// How the builder is constructed.
    #[serde(default)]
    pub config: BuilderConfig,
    /// What is assembled.
    pub request: AssembleRequest,
    /// What the host's stores answer.
    #[serde(default)]
    pub host: HostAnswers,
}

/// What an assembly came to: a pack or the core's refusal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The assembled pack.
    Pack(Box<ContextPack>),
    /// Why it was refused.
    Error(ctxpack_core::Error),
}

impl From<Result<ContextPack, ctxpack_core::Error>> for Outcome {
    fn from(r: Result<ContextPack, ctxpack_core::Error>) -> Self {
        match r {
            Ok(p) => Outcome::Pack(Box::new(p)),
            Err(e) => Outcome::Error(e),
        }
    }
}

/// Parses a scenario; an error names the offending field's path and the
/// line and column.
pub fn parse(text: &str) -> Result<Scenario, String> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            inner.to_string()
        } else {
            format!("field `{path}`: {inner}")
        }
    })
}

/// Reads and parses a scenario file.
pub fn load(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"{
        "description": "d",
        "request": {
            "context": {"trace-id": "t"},
            "query": "q", "tokenizer": "o200k-base", "budget": 10,
            "entry-overhead": 0, "system-prompt": "s", "keep-last": 2,
            "conversation": [{"role": "user", "content": "hi"}]
        }
    }"#;

    #[test]
    fn a_valid_scenario_parses() {
        let s = parse(BASE).unwrap();
        assert_eq!(s.request.budget, 10);
    }

    #[test]
    fn errors_name_the_field_path() {
        let bad = BASE.replace(r#""role": "user""#, r#""role": "robot""#);
        let e = parse(&bad).unwrap_err();
        assert!(e.contains("request.conversation[0].role"), "{e}");
        assert!(e.contains("robot"), "{e}");

        let bad = BASE.replace(r#""budget": 10"#, r#""budgett": 10"#);
        let e = parse(&bad).unwrap_err();
        assert!(e.contains("budgett"), "{e}");

        let bad = BASE.replace(r#""budget": 10"#, r#""budget": -1"#);
        let e = parse(&bad).unwrap_err();
        assert!(e.contains("request.budget"), "{e}");
    }
}
