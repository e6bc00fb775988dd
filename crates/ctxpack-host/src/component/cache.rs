//! Precompiled artifacts: a component compiled once per engine and kept
//! beside it, named so a changed component, wasmtime version or engine
//! setting never picks up a stale one.

use super::WasmError;
use std::path::Path;
use wasmtime::Engine;
use wasmtime::component::Component;

/// The precompiled artifact for the component at `path` (hex SHA-256
/// `sha256`) on `engine`: named by the SHA-256 of the component's hash and
/// the engine's compatibility hash, so a changed component, wasmtime
/// version or engine setting never picks up a stale one.
fn artifact_path(engine: &Engine, path: &Path, sha256: &str) -> std::path::PathBuf {
    use sha2::{Digest, Sha256};
    use std::hash::{Hash, Hasher};
    struct Feed(Sha256);
    impl Hasher for Feed {
        fn finish(&self) -> u64 {
            0
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }
    let mut feed = Feed(Sha256::new());
    feed.write(sha256.as_bytes());
    engine.precompile_compatibility_hash().hash(&mut feed);
    // Twelve bytes of the hash tell artifacts apart well enough.
    let key = format!("{:x}", feed.0.finalize());
    path.with_extension(format!("{}.cwasm", ctxpack_core::text::cut(&key, ..24)))
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(bytes))
}

/// The component at `path`, and whether it came from a precompiled
/// artifact.
pub(super) fn load_cached(
    engine: &Engine,
    path: &Path,
    sha256: Option<&str>,
) -> Result<(Component, bool), WasmError> {
    let read =
        || std::fs::read(path).map_err(|e| WasmError(format!("loading {}: {e}", path.display())));
    let mut bytes = None;
    let sha256 = match sha256 {
        Some(known) => known.to_owned(),
        None => hex_sha256(bytes.insert(read()?)),
    };
    let artifact = artifact_path(engine, path, &sha256);
    if artifact.is_file() {
        // SAFETY: wasmtime requires that a precompiled artifact be trusted
        // and, as it is mapped, not changed while in use. This one was
        // written by `precompile_component` below, under a name derived
        // from the component's own hash and this engine's compatibility
        // hash, next to the component the build produced, and only ever
        // replaced by renaming a new file over it (a mapping keeps the old
        // one); a file wasmtime rejects (another version, a damaged write)
        // falls through to compiling.
        if let Ok(component) = unsafe { Component::deserialize_file(engine, &artifact) } {
            return Ok((component, true));
        }
    }
    let bytes = match bytes {
        Some(b) => b,
        None => read()?,
    };
    let compiled = engine
        .precompile_component(&bytes)
        .map_err(|e| WasmError(format!("compiling {}: {e:#}", path.display())))?;
    // Written to a temporary name and renamed, so a reader never sees half.
    let partial = artifact.with_extension("partial");
    if std::fs::write(&partial, &compiled).is_ok() {
        let _ = std::fs::rename(&partial, &artifact);
    }
    // SAFETY: `compiled` was produced just now by this engine from the
    // component's bytes.
    let component = unsafe { Component::deserialize(engine, &compiled) }
        .map_err(|e| WasmError(format!("loading {}: {e:#}", path.display())))?;
    Ok((component, false))
}
