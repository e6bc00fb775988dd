//! Driving an assembly with JSON text, natively or inside the component.
//!
//! The `json` interface of the WIT (and `ctxpack_core::json`) takes one
//! string each way per step. [`JsonSteps`] is that protocol on either
//! engine; [`drive`] answers it from an [`InMemoryHost`], as the Python
//! and JavaScript hosts answer it from theirs. The outcome's text is kept
//! as the engine gave it, so a test can compare it byte for byte.

use crate::error::WasmError;
use crate::scenario::{Outcome, Reply, Scenario};
use crate::steps::JsonSteps;
use crate::stores::InMemoryHost;
use crate::{outcome, router_text};
use ctxpack_core::Error;
use ctxpack_core::json::{Call, JsonAssembly};
use serde::Deserialize;
use std::rc::Rc;

/// A step as JSON, read back: a round of calls, or the outcome.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
enum Step {
    Calls(Vec<Call<'static>>),
    Done(serde::de::IgnoredAny),
}

/// Drives `steps` to its end, answering from `host` for `context`; gives
/// the outcome's JSON as the engine wrote it (`{"pack": …}`,
/// `{"handled": …}` or `{"failed": …}`).
pub fn drive(
    steps: &mut dyn JsonSteps,
    host: &mut InMemoryHost,
    context: &ctxpack_core::AgentContext,
) -> Result<String, WasmError> {
    let mut given: Option<String> = None;
    loop {
        let text = steps
            .step(given.as_deref())?
            .map_err(|e| WasmError::msg(format!("refused: {e}")))?;
        let step: Step = serde_json::from_str(&text)
            .map_err(|e| WasmError::msg(format!("step does not parse: {e}: {text}")))?;
        let reply = match step {
            // The outcome's own text: `{"done":` … `}` is the step.
            Step::Done(_) => {
                return text
                    .strip_prefix(r#"{"done":"#)
                    .and_then(|t| t.strip_suffix('}'))
                    .map(str::to_owned)
                    .ok_or_else(|| WasmError::msg(format!("not a done step: {text}")));
            }
            Step::Calls(calls) => {
                let answers: Vec<_> = calls.iter().map(|c| c.call(host, context)).collect();
                serde_json::to_string(&answers).map_err(WasmError::msg)?
            }
        };
        given = Some(reply);
    }
}

/// The outcome of `scenario` driven with JSON, and the outcome's text as
/// the engine wrote it.
fn finish(
    text: Result<String, Error>,
    host: &InMemoryHost,
) -> Result<(Outcome, String), WasmError> {
    let (reply, text) = match text {
        Ok(text) => {
            let reply: Reply = serde_json::from_str(&text)
                .map_err(|e| WasmError::msg(format!("outcome does not parse: {e}")))?;
            (reply, text)
        }
        Err(e) => {
            let reply = Reply::refused(e);
            let text = serde_json::to_string(&reply).map_err(WasmError::msg)?;
            (reply, text)
        }
    };
    Ok((outcome(reply, host), text))
}

/// The scenario's configuration and request as the JSON a host sends.
fn texts(scenario: &Scenario) -> Result<(String, String), WasmError> {
    let config = serde_json::to_string(&scenario.config).map_err(WasmError::msg)?;
    let request = serde_json::to_string(&scenario.request).map_err(WasmError::msg)?;
    Ok((config, request))
}

/// Runs `scenario` natively through `ctxpack_core::json`.
pub fn run_native(scenario: &Scenario) -> Result<(Outcome, String), WasmError> {
    let mut host = InMemoryHost::new(scenario.host.clone());
    let (config, request) = texts(scenario)?;
    let context = &scenario.request.context;
    let text = match ctxpack_core::json::builder(&config) {
        Err(e) => Err(e),
        Ok(builder) => {
            let builder = Rc::new(builder);
            match router_text(scenario) {
                Err(e) => Err(e),
                Ok(None) => {
                    let mut steps = JsonAssembly::start(builder, &request);
                    Ok(drive(&mut steps, &mut host, context)?)
                }
                Ok(Some((text, format))) => match ctxpack_core::Router::from_text(text, format) {
                    Err(e) => Err(e),
                    Ok(router) => {
                        let mut steps = JsonAssembly::handle(&router, builder, &request);
                        Ok(drive(&mut steps, &mut host, context)?)
                    }
                },
            }
        }
    };
    finish(text, &host)
}

/// Runs `scenario` through the component's `json` interface.
pub fn run_component(
    runtime: &crate::Runtime,
    scenario: &Scenario,
) -> Result<(Outcome, String), WasmError> {
    let (config, request) = texts(scenario)?;
    let mut instance = runtime
        .instantiate(
            InMemoryHost::default(),
            &ctxpack_core::BuilderConfig::default(),
        )?
        .map_err(WasmError::msg)?;
    let mut host = InMemoryHost::new(scenario.host.clone());
    let context = &scenario.request.context;
    let text = match instance.json_builder(&config)? {
        Err(e) => Err(e),
        Ok(builder) => {
            let router = match router_text(scenario) {
                Err(e) => Err(e),
                Ok(None) => Ok(None),
                Ok(Some((text, format))) => instance.router(text, format)?.map(Some),
            };
            match router {
                Err(e) => Err(e),
                Ok(router) => {
                    let mut steps = instance.json_start(builder, router, &request)?;
                    Ok(drive(&mut steps, &mut host, context)?)
                }
            }
        }
    };
    // The component calls no import when driven with JSON.
    if instance.host().total_calls() != 0 {
        return Err(WasmError::msg(
            "the component called an import while driven with JSON",
        ));
    }
    finish(text, &host)
}
