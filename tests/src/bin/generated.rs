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
//!
//! Beside each, `NAME.calls.json` is what the scenario stores
//! (`ctxpack_scenario::InMemoryHost`, the one scenario host) were asked
//! and answered natively, in order: `[{"call": …, "answer": …}, …]`, as
//! the JSON steps write calls and read answers. The hosts in other
//! languages replay it instead of answering the scenario themselves, and
//! check every call they are asked is the recorded one. The corpus's
//! recordings go in `DIR/corpus/NAME.calls.json`.

use ctxpack_conformance::generate::{Source, edge_scenario, scenario};
use ctxpack_conformance::scenarios;
use ctxpack_scenario::{Outcome, Scenario};
use std::path::{Path, PathBuf};
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

fn write(dir: &Path, n: u64) -> Result<(), String> {
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
    for (name, s) in scenarios() {
        let outcome = ctxpack_scenario::run_native(&s);
        put_file(
            &corpus,
            &format!("{name}.calls.json"),
            json(&outcome.recorded)?,
        )?;
    }
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

/// Writes `s` as `DIR/NAME.json`, its native outcome as
/// `DIR/NAME.expected.json` and its stores' calls as `DIR/NAME.calls.json`.
fn put(dir: &Path, name: &str, s: &Scenario) -> Result<(), String> {
    let Outcome {
        reply,
        host_calls,
        recorded,
    } = ctxpack_scenario::run_native(s);
    let expected = format!(
        r#"{{"reply":{},"host-calls":{}}}"#,
        json(&reply)?,
        json(&host_calls)?
    );
    put_file(dir, &format!("{name}.json"), json(s)?)?;
    put_file(dir, &format!("{name}.expected.json"), expected)?;
    put_file(dir, &format!("{name}.calls.json"), json(&recorded)?)
}

fn put_file(dir: &Path, file: &str, body: String) -> Result<(), String> {
    let path = dir.join(file);
    std::fs::write(&path, body).map_err(|e| format!("{}: {e}", path.display()))
}

fn fail(message: &str) -> ExitCode {
    eprintln!("{message}");
    ExitCode::from(2)
}

/// Compact JSON.
fn json<T: serde::Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| e.to_string())
}
