//! The conformance corpus: scenario files under `tests/scenarios/`, each
//! with its expected outcome under `tests/expected/`.
//!
//! Every engine runs the same files: the core natively, and the component
//! under wasmtime. Expected files change only when a run sets `BLESS=1`, so a
//! changed outcome shows up in review as a diff.

pub mod fence;
pub mod fuzz;
pub mod generate;
pub mod invariants;
pub mod properties;
pub mod reference;

/// The README's Rust samples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct Readme;

/// The book's Rust samples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/src/steps.md")]
pub struct BookSteps;

/// The book's model page's Rust samples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/src/models.md")]
pub struct BookModels;

use ctxpack_scenario::{Outcome, Scenario, scenario};
use std::path::{Path, PathBuf};

/// The folder this crate lives in.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every scenario, by name, sorted.
pub fn scenarios() -> Vec<(String, Scenario)> {
    let dir = root().join("scenarios");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".json").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let s =
                scenario::load(&dir.join(format!("{name}.json"))).unwrap_or_else(|e| panic!("{e}"));
            (name, s)
        })
        .collect()
}

/// The outcome as the expected files hold it.
pub fn render(outcome: &Outcome) -> String {
    let mut text = serde_json::to_string_pretty(outcome).unwrap_or_else(|e| panic!("{e}"));
    text.push('\n');
    text
}

fn expected_path(name: &str) -> PathBuf {
    root().join("expected").join(format!("{name}.json"))
}

/// Whether this run rewrites the expected files.
pub fn blessing() -> bool {
    std::env::var_os("BLESS").is_some_and(|v| v == "1")
}

/// Checks `outcome` against the expected file of `name` (or writes it when
/// blessing) and returns a description of the mismatch, if any.
pub fn check_expected(name: &str, outcome: &Outcome) -> Option<String> {
    let path = expected_path(name);
    let actual = render(outcome);
    if blessing() {
        write(&path, &actual);
        return None;
    }
    match std::fs::read_to_string(&path) {
        Ok(expected) if expected == actual => None,
        Ok(_) => Some(format!(
            "{name}: outcome differs from {} (rerun with BLESS=1 to accept, then review the diff)\nactual:\n{actual}",
            path.display()
        )),
        Err(e) => Some(format!(
            "{name}: no expected outcome at {} ({e}); run with BLESS=1 to create it",
            path.display()
        )),
    }
}

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
