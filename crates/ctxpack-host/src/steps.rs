//! The step protocols, whatever the engine.
//!
//! [`Steps`] is the step protocol (see the `assembly` resource in
//! `wit/world.wit` and `ctxpack_core::Assembly`) with owned values, the same
//! for a core [`Assembly`] and for an assembly resource inside a component
//! instance (`crate::component::ComponentAssembly`): a host written against
//! it awaits its stores between steps and runs unchanged on either engine.
//! [`JsonSteps`] is the same with one JSON string each way per step.

use crate::error::WasmError;
use ctxpack_core::json::JsonAssembly;
use ctxpack_core::{Answer, Assembly, Call, ContextPack, Error, Failure, Next};

/// What an assembly needs next, or its outcome, owned.
// The outcome is large, and given once: boxing it would save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A round of calls; answer each by its index, in any order.
    Calls(Vec<Call<'static>>),
    /// The outcome.
    Done(Result<ContextPack, Failure>),
}

/// An assembly in progress, on either engine. Each call may fail as
/// WebAssembly (a trap, a limit); a step answered out of turn is the inner
/// `Err` ([`Error::StepMismatch`]), and changes nothing.
pub trait Steps {
    /// What the assembly needs next, or its outcome.
    fn next(&mut self) -> Result<Step, WasmError>;
    /// The answer to call `call` of the round asked.
    fn provide(&mut self, call: usize, answer: Answer) -> Result<Result<(), Error>, WasmError>;
}

impl Steps for Assembly<'_> {
    fn next(&mut self) -> Result<Step, WasmError> {
        Ok(match Assembly::next(self) {
            Next::Calls(calls) => Step::Calls(calls.to_vec()),
            Next::Done(outcome) => Step::Done(outcome),
        })
    }

    fn provide(&mut self, call: usize, answer: Answer) -> Result<Result<(), Error>, WasmError> {
        Ok(Assembly::provide(self, call, answer))
    }
}

/// One JSON-driven assembly, on either engine.
pub trait JsonSteps {
    /// Answers the step asked last (if `answer` is given), then gives the
    /// next step's JSON; a refused answer is the inner `Err`.
    fn step(&mut self, answer: Option<&str>) -> Result<Result<String, Error>, WasmError>;
}

impl JsonSteps for JsonAssembly {
    fn step(&mut self, answer: Option<&str>) -> Result<Result<String, Error>, WasmError> {
        Ok(JsonAssembly::step(self, answer))
    }
}
