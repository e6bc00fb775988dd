//! Every spelling of the WIT's types that ctxpack would otherwise restate by
//! hand, written from `wit/` (read with `wit-parser`) and from the core's
//! own `Deserialize` implementations:
//!
//! - the Python package's classes, decoders and codec schema;
//! - the npm package's TypeScript types and the reasons' texts;
//! - the Rust conversions between the core's types and any bindings of the
//!   WIT (`ctxpack_wit::wit_conversions!`);
//! - the table of calls each JSON driver (Python, JavaScript) dispatches a
//!   step's calls through, from the component's imports;
//! - the `.proto` of the stores `ctxpack serve` calls over gRPC;
//! - the JSON Schemas of the service's API description.
//!
//! `cargo run -p ctxpack-codegen` writes them; `-- --check` fails while any
//! is stale (CI runs it, and `tests/tests/generated.rs`).

pub mod calls;
pub mod capabilities;
pub mod defaults;
pub mod errors;
pub mod proto;
pub mod python;
pub mod rust;
pub mod schema;
pub mod typescript;
pub mod wit;

use std::path::{Path, PathBuf};

/// The WIT types no binding spells: the typed step protocol's `step` and
/// `answer` hold `result`s; the packages drive the JSON face, where an
/// answer is `{"ok": …}` or `{"err": …}`.
const UNSPELT: &[&str] = &["step", "answer"];

/// A file the generator writes, by its path from the repository's root.
pub struct Output {
    pub path: PathBuf,
    pub text: String,
}

/// Every generated file, as it should read, for the repository at `root`.
pub fn outputs(root: &Path) -> Result<Vec<Output>, String> {
    let wit = wit::Wit::read(&root.join("wit"))?;
    let structs = defaults::core_structs()?;
    let out = |path: &str, text: String| Output {
        path: PathBuf::from(path),
        text,
    };
    Ok(vec![
        out(
            "hosts/python/src/ctxpack_wasm/types.py",
            python::types(&wit, UNSPELT, &structs)?,
        ),
        out(
            "packages/ctxpack/src/types.d.ts",
            typescript::types(&wit, UNSPELT, &structs)?,
        ),
        out(
            "packages/ctxpack/src/reasons.js",
            typescript::reasons(&wit)?,
        ),
        out(
            "crates/ctxpack-wit/src/generated.rs",
            rust::conversions(&wit) + &rust::capabilities(&wit)?,
        ),
        out(
            "crates/ctxpack-core/src/capability.rs",
            capabilities::rust(&wit),
        ),
        out("packages/ctxpack/src/calls.js", calls::javascript(&wit)),
        out("packages/ctxpack/src/errors.js", errors::javascript()),
        out("hosts/python/src/ctxpack_wasm/_errors.py", errors::python()),
        out(
            "hosts/python/src/ctxpack_wasm/_calls.py",
            calls::python(&wit),
        ),
        out("hosts/jco/defaults.json", default_config()?),
        out(
            "crates/ctxpack-service/proto/ctxpack/stores/v1/stores.proto",
            proto::stores(&wit)?,
        ),
        out(
            "crates/ctxpack-service/openapi/core-schemas.json",
            schema::schemas(&wit, UNSPELT, &structs)?,
        ),
    ])
}

/// The outputs whose file does not read as generated.
pub fn stale(root: &Path, outputs: &[Output]) -> Vec<PathBuf> {
    outputs
        .iter()
        .filter(|o| std::fs::read_to_string(root.join(&o.path)).ok().as_deref() != Some(&o.text))
        .map(|o| o.path.clone())
        .collect()
}

/// The repository's root, from this crate's manifest directory.
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The builder's configuration with every default written out, as the
/// core's `Default` makes it: JSON, for a host that must spell every
/// field (jco's typed records).
pub fn default_config() -> Result<String, String> {
    let config = ctxpack_core::BuilderConfig::default();
    serde_json::to_string_pretty(&config)
        .map(|t| t + "\n")
        .map_err(|e| e.to_string())
}
