//! Driving an assembly with JSON text, natively or inside the component.
//!
//! The `json` interface of the WIT (and `ctxpack_core::json`) takes one
//! string each way per step. [`JsonSteps`] is that protocol on either
//! engine; [`drive`] answers it from any [`Host`], as the Python and
//! JavaScript hosts answer it from theirs. The outcome's text is kept as
//! the engine gave it, so a test can compare it byte for byte.

use crate::error::WasmError;
use crate::steps::JsonSteps;
use ctxpack_core::json::Call;
use ctxpack_core::{AgentContext, Host};
use serde::Deserialize;

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
    host: &mut dyn Host,
    context: &AgentContext,
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
