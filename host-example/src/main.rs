//! `ctxpack-host-example`: assemble a scenario through the ctxpack
//! component under wasmtime (or natively) and print the pack and snapshot.

use ctxpack_host_example::{Outcome, Runtime, report, scenario};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: ctxpack-host-example assemble <scenario.json> [--native] [--json]

  assemble   build the context pack for a scenario and print it with its snapshot
  --native   run the core natively instead of the component under wasmtime
  --json     print the outcome as JSON instead of a table";

struct Args {
    scenario: PathBuf,
    native: bool,
    json: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("assemble") => {}
        Some("-h" | "--help") | None => return Err(USAGE.into()),
        Some(other) => return Err(format!("unknown command `{other}`\n\n{USAGE}")),
    }
    let mut scenario = None;
    let (mut native, mut json) = (false, false);
    for arg in args {
        match arg.as_str() {
            "--native" => native = true,
            "--json" => json = true,
            flag if flag.starts_with("--") => {
                return Err(format!("unknown flag `{flag}`\n\n{USAGE}"));
            }
            path if scenario.is_none() => scenario = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument `{extra}`\n\n{USAGE}")),
        }
    }
    let scenario = scenario.ok_or_else(|| format!("missing <scenario.json>\n\n{USAGE}"))?;
    Ok(Args {
        scenario,
        native,
        json,
    })
}

fn run() -> Result<Outcome, String> {
    let args = parse_args()?;
    let scenario = scenario::load(&args.scenario)?;
    let outcome = if args.native {
        ctxpack_host_example::run_native(&scenario)
    } else {
        let runtime = Runtime::load_bundled().map_err(|e| e.to_string())?;
        ctxpack_host_example::run_component(&runtime, &scenario).map_err(|e| e.to_string())?
    };
    if args.json {
        let text = serde_json::to_string_pretty(&outcome).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        print!("{}", report::outcome(&outcome));
    }
    Ok(outcome)
}

fn main() -> ExitCode {
    match run() {
        Ok(Outcome::Pack(_)) => ExitCode::SUCCESS,
        // The refusal was printed; it is still not a pack.
        Ok(Outcome::Error(_)) => ExitCode::from(1),
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}
