//! A wasmtime host for the ctxpack component.
//!
//! It loads the component, supplies its imports from in-memory stores read
//! from a scenario file, and runs `assemble`. The same scenario can also run
//! natively through `ctxpack-core`, which is how the conformance tests prove
//! both give identical results.

pub mod component;
pub mod report;
pub mod scenario;
pub mod stores;

pub use component::{Instance, Runtime, WasmError};
pub use scenario::{Outcome, Scenario};
pub use stores::{HostAnswers, InMemoryHost};

/// Runs `scenario` natively through the core.
pub fn run_native(scenario: &Scenario) -> Outcome {
    let mut host = InMemoryHost::new(scenario.host.clone());
    ctxpack_core::Builder::new(scenario.config.clone())
        .and_then(|b| b.assemble(&scenario.request, &mut host))
        .into()
}

/// Runs `scenario` through the component on `runtime`.
pub fn run_component(runtime: &Runtime, scenario: &Scenario) -> Result<Outcome, WasmError> {
    let host = InMemoryHost::new(scenario.host.clone());
    Ok(match runtime.instantiate(host, &scenario.config)? {
        Ok(mut instance) => instance.assemble(&scenario.request)?.into(),
        Err(e) => Outcome::Error(e),
    })
}
