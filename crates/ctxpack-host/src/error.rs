//! A failure of the WebAssembly machinery itself: loading, linking, a
//! trap, a limit.

use wasmtime::Trap;

const DEADLINE: &str = "deadline passed";

/// A failure of the WebAssembly machinery itself (load, link, trap, a
/// resource limit), as opposed to the core refusing a request.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct WasmError(pub(crate) String);

impl WasmError {
    /// Whether the call was interrupted by its deadline
    /// (`Instance::set_deadline`).
    pub fn is_deadline(&self) -> bool {
        self.0.starts_with(DEADLINE)
    }

    /// A failure described by `message`.
    pub fn msg(message: impl std::fmt::Display) -> Self {
        WasmError(message.to_string())
    }
}

impl From<wasmtime::Error> for WasmError {
    fn from(e: wasmtime::Error) -> Self {
        if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
            return WasmError(format!("{DEADLINE}: the call was interrupted"));
        }
        if e.downcast_ref::<Trap>() == Some(&Trap::OutOfFuel) {
            return WasmError(
                "fuel limit hit: the request needed more work than the host allows".into(),
            );
        }
        let text = format!("{e:#}");
        if let Some(at) = text.find("forcing trap when growing memory") {
            let what = ctxpack_core::text::cut(&text, at..)
                .lines()
                .next()
                .unwrap_or_default();
            return WasmError(format!("memory limit hit: {what}"));
        }
        if text.contains("too much data is being copied between the host and the guest") {
            return WasmError(
                "transfer limit hit: the component answered with more data than the host \
                 accepts in one call (raise it with --max-transfer-mb)"
                    .into(),
            );
        }
        WasmError(text)
    }
}
