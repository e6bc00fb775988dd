//! `cargo run -p ctxpack-codegen [-- --check]`: writes every generated
//! file, or with `--check` fails naming each one that is stale.

use std::process::ExitCode;

fn main() -> ExitCode {
    let check = std::env::args().any(|a| a == "--check");
    let root = ctxpack_codegen::repository_root();
    let outputs = match ctxpack_codegen::outputs(&root) {
        Ok(outputs) => outputs,
        Err(e) => {
            eprintln!("ctxpack-codegen: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stale = ctxpack_codegen::stale(&root, &outputs);
    if check {
        for path in &stale {
            eprintln!(
                "stale: {} (run `cargo run -p ctxpack-codegen`)",
                path.display()
            );
        }
        return if stale.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    for output in outputs.iter().filter(|o| stale.contains(&o.path)) {
        if let Err(e) = std::fs::write(root.join(&output.path), &output.text) {
            eprintln!("ctxpack-codegen: {}: {e}", output.path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {}", output.path.display());
    }
    ExitCode::SUCCESS
}
