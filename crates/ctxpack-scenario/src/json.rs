//! Scenarios driven with JSON text, natively or inside the component:
//! [`ctxpack_host::json::drive`] answering from the scenario's stores.

use crate::scenario::{Outcome, Reply, Scenario};
use crate::stores::InMemoryHost;
use crate::{outcome, router_text};
use ctxpack_core::Error;
use ctxpack_core::json::JsonAssembly;
use ctxpack_host::WasmError;
use ctxpack_host::json::drive;
use std::rc::Rc;

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
    runtime: &ctxpack_host::Runtime,
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
    if instance
        .host::<InMemoryHost>()
        .is_none_or(|h| h.total_calls() != 0)
    {
        return Err(WasmError::msg(
            "the component called an import while driven with JSON",
        ));
    }
    finish(text, &host)
}
