//! Hosting the ctxpack component under wasmtime.
//!
//! - [`component`]: loads the component (compiled once, then from a
//!   precompiled artifact keyed by the component's hash and the engine),
//!   instantiates it with [`Limits`] on memory, transfer and fuel, and
//!   calls its exports with the host's imports behind them.
//! - [`steps`]: the step protocols on either engine ([`Steps`], and
//!   [`JsonSteps`] with JSON text), for hosts that await their stores
//!   between steps; [`json::drive`] answers JSON steps from any
//!   `ctxpack_core::Host`.
//!
//! An instance is lent any `ctxpack_core::Host` ([`Lent`]); the scenario
//! format and its in-memory stores, which the tests, benchmarks and the
//! host example answer from, are the unpublished `ctxpack-scenario`.

// Text is cut only by `ctxpack_core::text::cut`, which never panics: a
// panic through the boundary is a trap that kills the instance.
#![cfg_attr(not(test), deny(clippy::string_slice))]
pub mod component;
mod error;
pub mod json;
pub mod steps;

pub use component::{ComponentAssembly, ComponentJsonAssembly, JsonBuilderHandle};
pub use component::{Instance, Lent, Limits, Runtime, Startup, WasmError};
pub use steps::{JsonSteps, Step, Steps};
