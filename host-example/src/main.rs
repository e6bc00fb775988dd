//! `ctxpack-host-example`: run the ctxpack component under wasmtime (or the
//! core natively) on scenario files, routes and labelled query sets.

mod eval;
mod report;

use ctxpack_core::ConfigFormat;
use ctxpack_host::Runtime;
use ctxpack_host::component::Limits;
use ctxpack_scenario::{InMemoryHost, Outcome, Reply, scenario};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage:
  ctxpack-host-example assemble <scenario.json> [--native] [--json]
      build the context pack for a scenario; print it with its snapshot
  ctxpack-host-example handle <scenario.json> [--native] [--json]
      route the scenario's query with its router, then dispatch: a skill with a
      trivial context, or the builder and the fallback skill
  ctxpack-host-example route <routes.yaml|json> <query> [--native] [--json]
      print the routing decision with every route's rule breakdown
  ctxpack-host-example evaluate <routes.yaml|json> <queries.tsv> [--native]
      accuracy, per-route precision/recall and low-confidence figures
  ctxpack-host-example diff <before.json> <after.json> [--native] [--json]
      run two scenarios and say what entered, left, moved or changed tokens
      between their snapshots, and why

  ctxpack-host-example component-path
      print the path of the bundled component (what the Python package ships)

  --native             run the core natively instead of the component under wasmtime
  --json               print JSON instead of tables
  --max-memory-mb N    limit each component instance's memory (the call traps past it)
  --max-transfer-mb N  most data the component may hand back in one call (default 128)
  --timings            (assemble) print to stderr how long each start-up step took
  --fuel N             limit the work of each call into the component";

struct Args {
    command: String,
    positional: Vec<String>,
    native: bool,
    json: bool,
    timings: bool,
    limits: Limits,
}

/// When `main` began: start-up timings count from here.
static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

fn number(flag: &str, value: Option<String>) -> Result<u64, String> {
    value
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("`{flag}` takes a whole number\n\n{USAGE}"))
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let command = match args.next() {
        Some(c)
            if [
                "assemble",
                "handle",
                "route",
                "evaluate",
                "diff",
                "component-path",
            ]
            .contains(&c.as_str()) =>
        {
            c
        }
        Some(h) if h == "-h" || h == "--help" => return Err(USAGE.into()),
        None => return Err(USAGE.into()),
        Some(other) => return Err(format!("unknown command `{other}`\n\n{USAGE}")),
    };
    let (mut positional, mut native, mut json, mut timings) = (Vec::new(), false, false, false);
    let mut limits = Limits::default();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--native" => native = true,
            "--json" => json = true,
            "--timings" => timings = true,
            "--max-memory-mb" => {
                let mb = number(&arg, args.next())?;
                limits.max_memory_bytes =
                    Some(usize::try_from(mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX));
            }
            "--fuel" => limits.fuel = Some(number(&arg, args.next())?),
            "--max-transfer-mb" => {
                let mb = number(&arg, args.next())?;
                limits.max_transfer_bytes =
                    Some(usize::try_from(mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX));
            }
            flag if flag.starts_with("--") => {
                return Err(format!("unknown flag `{flag}`\n\n{USAGE}"));
            }
            _ => positional.push(arg),
        }
    }
    let wanted = if command == "component-path" {
        0
    } else if ["route", "evaluate", "diff"].contains(&command.as_str()) {
        2
    } else {
        1
    };
    if positional.len() != wanted {
        return Err(format!("`{command}` takes {wanted} argument(s)\n\n{USAGE}"));
    }
    Ok(Args {
        command,
        positional,
        native,
        json,
        timings,
        limits,
    })
}

fn print_json<T: serde::Serialize>(value: &T) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    println!("{text}");
    Ok(())
}

/// Routes every query, natively or through one component instance.
fn decisions(
    args: &Args,
    config: &(String, ConfigFormat),
    queries: &[String],
) -> Result<Vec<ctxpack_core::RoutingDecision>, String> {
    if args.native {
        let router =
            ctxpack_core::Router::from_text(&config.0, config.1).map_err(|e| e.to_string())?;
        return Ok(queries.iter().map(|q| router.route(q)).collect());
    }
    let runtime = Runtime::load_bundled_limited(args.limits).map_err(|e| e.to_string())?;
    let mut instance = runtime
        .instantiate(ctxpack_core::NoHost, &Default::default())
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let router = instance
        .router(&config.0, config.1)
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    queries
        .iter()
        .map(|q| instance.route(router, q).map_err(|e| e.to_string()))
        .collect()
}

/// A new instance of `runtime` with `scenario`'s stores and builder.
fn instantiate(
    runtime: &Runtime,
    scenario: &scenario::Scenario,
) -> Result<ctxpack_host::Instance, String> {
    let host = InMemoryHost::new(scenario.host.clone());
    runtime
        .instantiate(host, &scenario.config)
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

/// Assembles `scenario` through the component, timing each start-up step
/// on stderr, then assembles it again on the same instance (warm) to say
/// what the first pack cost over a warm one.
fn timed_assemble(args: &Args, scenario: &scenario::Scenario) -> Result<Outcome, String> {
    let started = std::time::Instant::now();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let runtime = Runtime::load_bundled_limited(args.limits).map_err(|e| e.to_string())?;
    let loaded = started.elapsed();
    let mut instance = instantiate(&runtime, scenario)?;
    let before = started.elapsed();
    let reply = instance
        .assemble(&scenario.request)
        .map_err(|e| e.to_string())?;
    let first = started.elapsed() - before;
    let since_main = START.get().map_or(started.elapsed(), |t| t.elapsed());
    let startup = instance.startup();
    // Each pack timed below must answer as the first did.
    let timed = |instance: &mut ctxpack_host::Instance| {
        let t = std::time::Instant::now();
        let again = instance
            .assemble(&scenario.request)
            .map_err(|e| e.to_string())?;
        let took = t.elapsed();
        if again.is_ok() != reply.is_ok() {
            return Err("an instance answered otherwise than the first".to_owned());
        }
        Ok(took)
    };
    let median = |mut times: Vec<std::time::Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    // The same request again on the now warm instance: the median of 50.
    let warm = median(
        (0..50)
            .map(|_| timed(&mut instance))
            .collect::<Result<_, _>>()?,
    );
    // Fresh instances from the same loaded component, as a host that
    // instantiates per request would make them: the median first pack of 20.
    let fresh = median(
        (0..20)
            .map(|_| timed(&mut instantiate(&runtime, scenario)?))
            .collect::<Result<_, _>>()?,
    );
    eprintln!(
        "load component: {:.1} ms ({})",
        ms(loaded),
        if runtime.from_artifact() {
            "precompiled artifact"
        } else {
            "compiled now; the artifact is kept for next time"
        }
    );
    eprintln!("instantiate: {:.2} ms", ms(startup.instantiate));
    eprintln!("create builder: {:.2} ms", ms(startup.builder));
    eprintln!("first assemble: {:.2} ms", ms(first));
    eprintln!(
        "warm assemble (same instance, median of 50): {:.2} ms; first ÷ warm: {:.1}",
        ms(warm),
        first.as_secs_f64() / warm.as_secs_f64()
    );
    eprintln!(
        "fresh instances of the loaded component, first assemble (median of 20): {:.2} ms; ÷ warm: {:.1}",
        ms(fresh),
        fresh.as_secs_f64() / warm.as_secs_f64()
    );
    eprintln!(
        "instantiate to first pack: {:.2} ms; main to first pack: {:.1} ms",
        ms(startup.instantiate + startup.builder + first),
        ms(since_main)
    );
    let host: &InMemoryHost = instance.host().ok_or("the instance lost its stores")?;
    Ok(ctxpack_scenario::outcome(reply.into(), host))
}

/// `assemble` or `handle`: one scenario, natively or in the component.
fn assemble(args: &Args) -> Result<bool, String> {
    let path = PathBuf::from(&args.positional[0]);
    let mut scenario = scenario::load(&path)?;
    if args.command == "assemble" {
        scenario.router = None;
    } else if scenario.router.is_none() {
        return Err(format!(
            "{}: `handle` needs a scenario with a `router`",
            path.display()
        ));
    }
    let outcome: Outcome = if args.native {
        ctxpack_scenario::run_native(&scenario)
    } else if args.timings && args.command == "assemble" {
        timed_assemble(args, &scenario)?
    } else {
        let runtime = Runtime::load_bundled_limited(args.limits).map_err(|e| e.to_string())?;
        ctxpack_scenario::run_component(&runtime, &scenario).map_err(|e| e.to_string())?
    };
    if args.json {
        print_json(&outcome)?;
    } else {
        print!("{}", report::outcome(&outcome));
    }
    Ok(!matches!(outcome.reply, Reply::Failed(_)))
}

/// `diff`: the snapshots of two scenarios, compared.
fn diff(args: &Args) -> Result<bool, String> {
    let runtime = if args.native {
        None
    } else {
        Some(Runtime::load_bundled_limited(args.limits).map_err(|e| e.to_string())?)
    };
    let mut snapshots = Vec::new();
    for path in &args.positional {
        let scenario = scenario::load(&PathBuf::from(path))?;
        let outcome = match &runtime {
            None => ctxpack_scenario::run_native(&scenario),
            Some(rt) => {
                ctxpack_scenario::run_component(rt, &scenario).map_err(|e| e.to_string())?
            }
        };
        let snapshot = match &outcome.reply {
            Reply::Handled(h) if matches!(h.dispatch, ctxpack_core::Dispatch::Skill(_)) => {
                return Err(format!("{path}: dispatched to a skill, no snapshot"));
            }
            Reply::Failed(f) if f.snapshot.is_none() => {
                return Err(format!("{path}: refused: {}", f.error));
            }
            reply => reply.snapshot().cloned(),
        };
        snapshots.extend(snapshot);
    }
    let d = match &runtime {
        None => ctxpack_core::diff(&snapshots[0], &snapshots[1]),
        Some(rt) => {
            let mut instance = rt
                .instantiate(ctxpack_core::NoHost, &Default::default())
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            instance
                .diff_snapshots(&snapshots[0], &snapshots[1])
                .map_err(|e| e.to_string())?
        }
    };
    if args.json {
        print_json(&d)?;
    } else {
        print!("{}", report::diff(&d));
    }
    Ok(true)
}

/// Runs the command; `Ok(false)` when the core refused the request.
fn run() -> Result<bool, String> {
    let args = parse_args()?;
    match args.command.as_str() {
        "component-path" => {
            println!("{}", ctxpack_host::component::bundled_path().display());
            Ok(true)
        }
        "assemble" | "handle" => assemble(&args),
        "diff" => diff(&args),
        "route" => {
            let config = scenario::read_router_file(&PathBuf::from(&args.positional[0]))?;
            let d = decisions(&args, &config, &args.positional[1..])?;
            if args.json {
                print_json(&d[0])?;
            } else {
                print!("{}", report::decision(&d[0]));
            }
            Ok(true)
        }
        _ => {
            let config = scenario::read_router_file(&PathBuf::from(&args.positional[0]))?;
            let set_path = PathBuf::from(&args.positional[1]);
            let text = std::fs::read_to_string(&set_path)
                .map_err(|e| format!("{}: {e}", set_path.display()))?;
            let set = eval::parse(&text).map_err(|e| format!("{}: {e}", set_path.display()))?;
            let queries: Vec<String> = set.iter().map(|q| q.query.clone()).collect();
            let d = decisions(&args, &config, &queries)?;
            print!("{}", eval::report(&set, &d));
            Ok(true)
        }
    }
}

fn main() -> ExitCode {
    START.get_or_init(std::time::Instant::now);
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        // The refusal was printed; it is still not a result.
        Ok(false) => ExitCode::from(1),
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}
