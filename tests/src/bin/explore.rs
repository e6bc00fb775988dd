//! Explores the properties (`ctxpack_conformance::properties`) with fresh
//! seeds, beyond the fixed ones `cargo test` runs every time:
//!
//! ```sh
//! cargo run -p ctxpack-conformance --release --bin explore -- [CASES] [--seed S] [--out DIR] [PROPERTY…]
//! ```
//!
//! runs each property (all of them, or those named) on CASES seeds (10,000)
//! drawn from S (by default, from the clock), and writes every case that
//! breaks one to DIR (`target/explore`) as a scenario file, named by the
//! property and the seed, with the failure in its description. A finding
//! becomes part of every run: its seed goes into `REGRESSIONS` in
//! `tests/tests/properties.rs`, and its scenario, once the fault is fixed,
//! into `tests/scenarios/` with the facts it exists for. Exits 1 if
//! anything was found.

use ctxpack_conformance::properties::{ALL, Property, mix};
use std::path::PathBuf;
use std::process::ExitCode;

struct Args {
    cases: u64,
    seed: u64,
    out: PathBuf,
    names: Vec<String>,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        cases: 10_000,
        seed: clock_seed(),
        out: ctxpack_conformance::root().join("../target/explore"),
        names: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seed" => {
                let v = it.next().ok_or("--seed: a number")?;
                args.seed = v.parse().map_err(|e| format!("--seed {v}: {e}"))?;
            }
            "--out" => args.out = PathBuf::from(it.next().ok_or("--out: a folder")?),
            a if a.parse::<u64>().is_ok() => args.cases = a.parse().unwrap_or(args.cases),
            a if ALL.iter().any(|p| p.name == a) => args.names.push(a.to_owned()),
            a => {
                let names: Vec<&str> = ALL.iter().map(|p| p.name).collect();
                return Err(format!(
                    "{a}: not a case count, --seed, --out or a property ({})",
                    names.join(", ")
                ));
            }
        }
    }
    Ok(args)
}

/// A seed from the clock and the process: a new one every run.
fn clock_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    mix(nanos ^ u64::from(std::process::id()).rotate_left(32))
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let chosen: Vec<&Property> = ALL
        .iter()
        .filter(|p| args.names.is_empty() || args.names.iter().any(|n| n == p.name))
        .collect();
    eprintln!(
        "exploring {} properties on {} seeds from --seed {}",
        chosen.len(),
        args.cases,
        args.seed
    );
    // The panics are the findings: report them here, once, not as the
    // default hook prints them.
    std::panic::set_hook(Box::new(|_| {}));
    let mut found = 0;
    for p in &chosen {
        let started = std::time::Instant::now();
        let mut broken = 0;
        for i in 0..args.cases {
            let seed = mix(args.seed.wrapping_add(i));
            let Err(e) = std::panic::catch_unwind(|| (p.check)(seed)) else {
                continue;
            };
            broken += 1;
            let message = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "a panic".to_owned());
            let path = args.out.join(format!("{}-{seed}.json", p.name));
            match write(&path, p, seed, &message) {
                Ok(()) => eprintln!("{}: seed {seed}: {}", p.name, first_line(&message)),
                Err(e) => eprintln!("{}: seed {seed}: {e}", p.name),
            }
        }
        eprintln!(
            "{}: {} cases, {broken} broken, {:.1} s",
            p.name,
            args.cases,
            started.elapsed().as_secs_f64()
        );
        found += broken;
    }
    if found > 0 {
        eprintln!("{found} findings in {}", args.out.display());
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Writes the case of `seed` as a scenario file that says what broke.
fn write(path: &PathBuf, p: &Property, seed: u64, message: &str) -> Result<(), String> {
    let mut s = (p.scenario)(seed);
    s.description = format!(
        "Found by explore: {} broke on seed {seed}: {}",
        p.name,
        first_line(message)
    );
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(&s).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
}

fn first_line(message: &str) -> &str {
    let line = message.lines().next().unwrap_or(message);
    &line[..line.floor_char_boundary(line.len().min(300))]
}
