//! Builds the ctxpack component so that `cargo test` and `cargo run` at the
//! workspace root need no manual step.
//!
//! The guest crate is compiled for `wasm32-unknown-unknown` by a nested cargo
//! with its own target directory, then turned into a component with
//! `wit-component`. Built that way it imports only ctxpack's interfaces; a
//! Rust std guest for `wasm32-wasip2` would import `wasi:io` and `wasi:cli`.
//!
//! Set `CTXPACK_COMPONENT=/path/to/ctxpack.wasm` to use a prebuilt component
//! instead, or `CTXPACK_COMPONENT_FEATURES=o200k` (a comma-separated list of
//! `o200k`, `cl100k`) to build one with only those encodings; it refuses a
//! request for the others, naming them.

use std::env;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::Command;

const GUEST_TARGET: &str = "wasm32-unknown-unknown";

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo:rerun-if-env-changed=CTXPACK_COMPONENT");
    println!("cargo:rerun-if-env-changed=CTXPACK_COMPONENT_FEATURES");
    let out = PathBuf::from(env::var("OUT_DIR")?).join("ctxpack.wasm");
    if let Some(prebuilt) = env::var_os("CTXPACK_COMPONENT") {
        let prebuilt = PathBuf::from(prebuilt);
        println!("cargo:rerun-if-changed={}", prebuilt.display());
        std::fs::copy(&prebuilt, &out)
            .map_err(|e| format!("CTXPACK_COMPONENT={}: {e}", prebuilt.display()))?;
    } else {
        let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?).join("../..");
        for watched in [
            "wit",
            "crates/ctxpack-core",
            "crates/ctxpack-component",
            "crates/ctxpack-wit",
            "Cargo.lock",
            // Workspace dependency features and profiles are the guest's too.
            "Cargo.toml",
        ] {
            println!("cargo:rerun-if-changed={}", root.join(watched).display());
        }
        let module = build_guest(&root)?;
        let bytes = std::fs::read(&module)
            .map_err(|e| format!("reading the guest module {}: {e}", module.display()))?;
        let component = wit_component::ComponentEncoder::default()
            .module(&bytes)?
            .validate(true)
            .encode()?;
        std::fs::write(&out, component)?;
    }
    println!("cargo:rustc-env=CTXPACK_COMPONENT_PATH={}", out.display());
    // Hashed once here, so a host keying precompiled artifacts by it need
    // not read and hash eight megabytes at every start.
    use sha2::Digest;
    let digest = sha2::Sha256::digest(std::fs::read(&out)?);
    println!("cargo:rustc-env=CTXPACK_COMPONENT_SHA256={digest:x}");
    Ok(())
}

/// Compiles the guest crate and returns the path of its core module.
fn build_guest(root: &Path) -> Result<PathBuf, Box<dyn Error>> {
    let target_dir = env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("ctxpack-guest");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["rustc", "--release", "-p", "ctxpack-component", "--target"])
        .arg(GUEST_TARGET)
        // The guest is a cdylib only for wasm: natively its export names
        // (`ctxpack:context/builder@…`) are not valid linker symbols.
        .args(["--crate-type", "cdylib"])
        .arg("--target-dir")
        .arg(&target_dir);
    if let Ok(features) = env::var("CTXPACK_COMPONENT_FEATURES") {
        cmd.args(["--no-default-features", "--features", &features]);
    }
    // The outer cargo's settings (flags, wrappers such as clippy-driver,
    // profile and target variables) are for the host build, not the guest.
    for (key, _) in env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let outer = (key.starts_with("CARGO_") && key != "CARGO_HOME")
            || key.starts_with("RUSTC")
            || key.starts_with("RUSTDOC")
            || key == "RUSTFLAGS"
            || matches!(
                key,
                "TARGET" | "HOST" | "OUT_DIR" | "OPT_LEVEL" | "PROFILE" | "DEBUG" | "NUM_JOBS"
            );
        if outer {
            cmd.env_remove(key);
        }
    }
    // WebAssembly SIMD, which every engine ctxpack runs in supports
    // (wasmtime, Node, every current browser): the counters' byte loops
    // and the allocator's copies are vectorised as they are natively.
    // Symbols stripped: the `name` section (function names for trap
    // backtraces) is 0.3 MB of the module, 70 kB gzipped, and a trap is
    // a bug to reproduce natively anyway.
    cmd.env(
        "CARGO_ENCODED_RUSTFLAGS",
        ["-Ctarget-feature=+simd128", "-Cstrip=symbols"].join("\x1f"),
    );
    // One codegen unit: LLVM sees each crate whole and drops and merges
    // more code. Measured: 15 kB less gzipped (2.494 → 2.480 MB), for a
    // longer build of the core crate (one LLVM thread instead of two on a
    // 2-core machine) — the component stays under its download
    // limit.
    cmd.env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1");
    // And the whole program at once (fat LTO): code only one caller
    // needs is inlined and the rest dropped across crates. Measured with
    // the tokenizer-file reader in: 16 kB less gzipped (2.520 → 2.504
    // MB), for some 30 s more to build the guest.
    cmd.env("CARGO_PROFILE_RELEASE_LTO", "fat");
    let status = cmd
        .status()
        .map_err(|e| format!("running cargo for the guest: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building ctxpack-component for {GUEST_TARGET} failed ({status}); \
             is the target installed? run `rustup toolchain install` in the repository"
        )
        .into());
    }
    Ok(target_dir
        .join(GUEST_TARGET)
        .join("release")
        .join("ctxpack_component.wasm"))
}
