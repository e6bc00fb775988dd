//! Where the ctxpack component is: built by this crate's build script from
//! `crates/ctxpack-component`, or copied from `CTXPACK_COMPONENT`.

/// Path of the ctxpack WebAssembly component (`ctxpack.wasm`).
pub const COMPONENT_PATH: &str = env!("CTXPACK_COMPONENT_PATH");

/// Hex SHA-256 of the component at [`COMPONENT_PATH`], computed when it
/// was built.
pub const COMPONENT_SHA256: &str = env!("CTXPACK_COMPONENT_SHA256");
