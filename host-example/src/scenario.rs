//! Scenario files: a request, the builder's configuration and what the
//! host's stores answer, in one JSON document.

use crate::stores::HostAnswers;
use ctxpack_core::{AssembleRequest, BuilderConfig, ConfigFormat, ContextPack, Handling};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// With a router the scenario runs `handle` (route, then dispatch)
    /// instead of `assemble`.
    #[serde(default)]
    pub router: Option<RouterSpec>,
}

/// A router config: inline, or a file beside the scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum RouterSpec {
    /// YAML text.
    Yaml(String),
    /// JSON text.
    Json(String),
    /// A `.yaml`, `.yml` or `.json` file, relative to the scenario file.
    File(PathBuf),
}

impl RouterSpec {
    /// The config text and its format; `base` is the scenario's folder.
    pub fn text(&self, base: &Path) -> Result<(String, ConfigFormat), String> {
        match self {
            RouterSpec::Yaml(t) => Ok((t.clone(), ConfigFormat::Yaml)),
            RouterSpec::Json(t) => Ok((t.clone(), ConfigFormat::Json)),
            RouterSpec::File(p) => read_router_file(&base.join(p)),
        }
    }
}

/// Reads a router config file, its format by extension.
pub fn read_router_file(path: &Path) -> Result<(String, ConfigFormat), String> {
    let format = match path.extension().and_then(|e| e.to_str()) {
        Some("yaml" | "yml") => ConfigFormat::Yaml,
        Some("json") => ConfigFormat::Json,
        _ => {
            return Err(format!(
                "{}: a router config must end in .yaml, .yml or .json",
                path.display()
            ));
        }
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((text, format))
}

/// What a scenario came to, and the host calls it took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Outcome {
    /// The answer.
    pub reply: Reply,
    /// Calls to each host capability, by name.
    pub host_calls: BTreeMap<String, u32>,
}

/// A pack, a handling, or the core's refusal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reply {
    /// The assembled pack (`assemble`).
    Pack(Box<ContextPack>),
    /// The routing decision and dispatch (`handle`).
    Handled(Box<Handling>),
    /// Why it was refused.
    Error(ctxpack_core::Error),
}

impl From<Result<ContextPack, ctxpack_core::Error>> for Reply {
    fn from(r: Result<ContextPack, ctxpack_core::Error>) -> Self {
        match r {
            Ok(p) => Reply::Pack(Box::new(p)),
            Err(e) => Reply::Error(e),
        }
    }
}

impl From<Result<Handling, ctxpack_core::Error>> for Reply {
    fn from(r: Result<Handling, ctxpack_core::Error>) -> Self {
        match r {
            Ok(h) => Reply::Handled(Box::new(h)),
            Err(e) => Reply::Error(e),
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

/// Reads and parses a scenario file; a router file it names is read in
/// (and becomes inline text), so the scenario is self-contained afterwards.
pub fn load(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut scenario = parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(spec @ RouterSpec::File(_)) = &scenario.router {
        let base = path.parent().unwrap_or(Path::new("."));
        let (text, format) = spec.text(base)?;
        scenario.router = Some(match format {
            ConfigFormat::Yaml => RouterSpec::Yaml(text),
            ConfigFormat::Json => RouterSpec::Json(text),
        });
    }
    Ok(scenario)
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
        assert_eq!(s.request.budget, Some(10));
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
