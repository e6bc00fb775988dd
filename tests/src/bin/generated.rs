//! Writes the generator's scenarios (`ctxpack_conformance::generate`) and
//! their native outcomes as files, for the hosts in other languages to run
//! the same inputs — every section, profile, tokenizer, overhead and host
//! answer shape — and compare:
//!
//! ```sh
//! cargo run -p ctxpack-conformance --bin generated -- DIR [N]
//! ```
//!
//! writes `DIR/seed-K.json` (a scenario file) and `DIR/seed-K.expected.json`
//! (`{"reply": …, "host-calls": …}`, compact, as the corpus's expected
//! files are once their indentation is taken out) for K in 0..N (120), and
//! likewise `DIR/edge-K.json` for K in 0..N/3: the same generator with its
//! numbers at the edges (signed zeros, subnormals, the largest finite, …;
//! `generate::edge_scenario`), which every host must read as the native
//! core does.

use ctxpack_conformance::generate::{Source, edge_scenario, scenario};
use ctxpack_scenario::Scenario;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, n) = match args.as_slice() {
        [dir] => (PathBuf::from(dir), 120),
        [dir, n] => match n.parse() {
            Ok(n) => (PathBuf::from(dir), n),
            Err(e) => return fail(&format!("N: {e}")),
        },
        _ => return fail("usage: generated DIR [N]"),
    };
    if let Err(e) = write(&dir, n) {
        return fail(&e);
    }
    println!(
        "{n} generated scenarios and {} at the edges in {}",
        n / 3,
        dir.display()
    );
    ExitCode::SUCCESS
}

fn write(dir: &std::path::Path, n: u64) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for seed in 0..n {
        put(
            dir,
            &format!("seed-{seed}"),
            &scenario(&mut Source::seeded(seed)),
        )?;
    }
    for seed in 0..n / 3 {
        let s = edge_scenario(&mut Source::seeded(seed ^ 0xed6e));
        put(dir, &format!("edge-{seed}"), &s)?;
    }
    Ok(())
}

/// Writes `s` as `DIR/NAME.json` and its native outcome as
/// `DIR/NAME.expected.json`.
fn put(dir: &std::path::Path, name: &str, s: &Scenario) -> Result<(), String> {
    let outcome = ctxpack_scenario::run_native(s);
    let expected = format!(
        r#"{{"reply":{},"host-calls":{}}}"#,
        json(&outcome.reply)?,
        json(&outcome.host_calls)?
    );
    let write = |file: String, body: String| {
        let path = dir.join(file);
        std::fs::write(&path, body).map_err(|e| format!("{}: {e}", path.display()))
    };
    write(format!("{name}.json"), json(s)?)?;
    write(format!("{name}.expected.json"), expected)
}

fn fail(message: &str) -> ExitCode {
    eprintln!("{message}");
    ExitCode::from(2)
}

/// Compact JSON.
fn json<T: serde::Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| e.to_string())
}
