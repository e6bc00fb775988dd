//! `ctxpack-bench data DIR` writes the benchmark workloads the Python peer
//! runs, with what ctxpack selects from them; `ctxpack-bench peak` reports
//! the peak heap an assembly of the 10k pack takes beyond its input, and
//! how many allocations it makes.

mod quoting;

use ctxpack_bench::{Workload, chunks, conversation, pack, pack_file, trim, trim_file};
use ctxpack_core::Capability;
use ctxpack_core::{Builder, ContextPack};
use ctxpack_host::component::Runtime;
use ctxpack_scenario::stores::{Answer, InMemoryHost};
use std::alloc::{GlobalAlloc, Layout, System};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes live, the most ever live, and
/// the allocations made (a reallocation counts as one).
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["data", dir] => match data(std::path::Path::new(dir)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ctxpack-bench: {e}");
                ExitCode::FAILURE
            }
        },
        ["repeat", name, n] => finish(repeat(name, n, false)),
        ["repeat", name, n, "wasm"] => finish(repeat(name, n, true)),
        ["quoting"] => match quoting::run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ctxpack-bench: {e}");
                ExitCode::FAILURE
            }
        },
        ["peak"] => match peak() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ctxpack-bench: {e}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!(
                "usage: ctxpack-bench data DIR | peak | quoting | repeat pack-10k|pack-5k|trim-10k|pipeline|chat-200|chat-200-warm|seed-002 N [wasm]"
            );
            ExitCode::from(2)
        }
    }
}

fn finish(done: Result<(), String>) -> ExitCode {
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ctxpack-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The workload `repeat` runs by `name`.
fn workload(name: &str) -> Result<Workload, String> {
    Ok(match name {
        "pack-10k" => pack(&chunks(10_000, 260, 1), 128_000),
        "pack-5k" => pack(&chunks(5_000, 1_200, 2), 32_000),
        "trim-10k" => trim(&conversation(10_000, 3), 8_000),
        "pipeline" => ctxpack_bench::pipeline(4),
        "chat-200" | "chat-200-warm" => trim(&ctxpack_bench::chat(200, 5), 32_000),
        "seed-002" => {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/scenarios/seed-002-happy-path.json");
            let s = ctxpack_scenario::scenario::load(&path)?;
            Workload {
                config: s.config,
                request: s.request,
                host: s.host,
            }
        }
        _ => return Err(format!("no workload `{name}`")),
    })
}

/// Assembles one workload `n` times, natively or through the component
/// under wasmtime, for a profiler to watch; prints the mean and the
/// fastest time.
fn repeat(name: &str, n: &str, wasm: bool) -> Result<(), String> {
    let mut w = workload(name)?;
    // Every workload counts afresh each time but `chat-200-warm`, whose
    // builder keeps its counts: after the untimed first assembly each one
    // finds them all, as the warm re-assembly benchmark does for all but
    // its new turn.
    // `seed-002` too: it is the per-call figure of a warm builder.
    if name != "chat-200-warm" && name != "seed-002" {
        w.config.count_cache_entries = 0;
    }
    let times = n
        .parse::<u32>()
        .map_err(|e| format!("N `{n}`: {e}"))?
        .max(1);
    // Either way: the host's answer is handed over before each timed
    // assembly, as in the criterion benchmarks, and only the assembly (and
    // dropping the pack, as there) is timed. (Handing over for the untimed
    // first one too left the heap in a state that made every later native
    // pack ~20% slower.)
    type Timed = Box<dyn FnMut(bool) -> Result<std::time::Duration, String>>;
    let mut assemble: Timed = if wasm {
        let runtime = Runtime::load_bundled().map_err(|e| e.to_string())?;
        let mut instance = runtime
            .instantiate(InMemoryHost::new(w.host.clone()), &w.config)
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        Box::new(move |hand_over| {
            if hand_over && let Some(host) = instance.host_mut::<InMemoryHost>() {
                Workload::hand_over(w.retrieved(), host);
            }
            timed(|| match instance.assemble(&w.request) {
                Ok(answer) => answer.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            })
        })
    } else {
        let builder = Builder::new(w.config.clone()).map_err(|e| e.to_string())?;
        let mut host = InMemoryHost::new(w.host.clone());
        Box::new(move |hand_over| {
            if hand_over {
                Workload::hand_over(w.retrieved(), &mut host);
            }
            timed(|| {
                builder
                    .assemble(&w.request, &mut host)
                    .map_err(|e| e.to_string())
            })
        })
    };
    // One assembly first, untimed, from the host's own store: it builds
    // the tokenizer tables.
    assemble(false)?;
    let mut elapsed = std::time::Duration::ZERO;
    let mut fastest = std::time::Duration::MAX;
    for _ in 0..times {
        let took = assemble(true)?;
        elapsed += took;
        fastest = fastest.min(took);
    }
    // The fastest run is the steadier figure on a shared machine.
    println!(
        "{:.4} ms per assembly, fastest {:.4} ms",
        elapsed.as_secs_f64() * 1e3 / f64::from(times),
        fastest.as_secs_f64() * 1e3
    );
    Ok(())
}

/// How long `assemble` takes, dropping the pack it makes included.
fn timed(
    assemble: impl FnOnce() -> Result<ContextPack, String>,
) -> Result<std::time::Duration, String> {
    let started = std::time::Instant::now();
    drop(assemble()?);
    Ok(started.elapsed())
}

fn assemble(w: &ctxpack_bench::Workload) -> Result<ContextPack, String> {
    let builder = Builder::new(w.config.clone()).map_err(|e| e.to_string())?;
    let mut host = InMemoryHost::new(w.host.clone());
    builder
        .assemble(&w.request, &mut host)
        .map_err(|e| e.to_string())
}

fn write(path: &std::path::Path, value: &serde_json::Value) -> Result<(), String> {
    let text = serde_json::to_string(value).map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn data(dir: &std::path::Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (name, n, bytes, seed, budget) in [
        ("pack-10k.json", 10_000, 260, 1, 128_000),
        ("pack-5k.json", 5_000, 1_200, 2, 32_000),
    ] {
        let cs = chunks(n, bytes, seed);
        let w = pack(&cs, budget);
        let p = assemble(&w)?;
        let selected: Vec<String> = p.entries.iter().map(|e| e.id.clone()).collect();
        write(&dir.join(name), &pack_file(&cs, budget, &selected))?;
        // The same workload as a scenario file, for the host packages'
        // boundary benchmarks.
        let scenario = serde_json::json!({
            "config": w.config, "request": w.request, "host": w.host,
        });
        let name = name.replace(".json", ".scenario.json");
        write(&dir.join(name), &scenario)?;
    }
    let turns = conversation(10_000, 3);
    let w = trim(&turns, 8_000);
    let p = assemble(&w)?;
    write(
        &dir.join("trim-10k.json"),
        &trim_file(&turns, 8_000, p.entries.len()),
    )?;
    let scenario = serde_json::json!({"config": w.config, "request": w.request});
    write(&dir.join("trim-10k.scenario.json"), &scenario)?;
    // The texts `bench/count.py` counts beside the Python peers: those of
    // the count benchmark (benches/count.rs).
    const MB: usize = 1 << 20;
    for (name, text) in [
        ("prose-1mb.txt", ctxpack_bench::texts::prose(MB, 1)),
        ("code-1mb.txt", ctxpack_bench::texts::code(MB)),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

fn peak() -> Result<(), String> {
    let cs = chunks(10_000, 260, 1);
    let mut w = pack(&cs, 128_000);
    w.config.preload = vec![ctxpack_core::Tokenizer::O200kBase];
    watch(
        "10k pack",
        w,
        cs.iter().map(|c| c.text.len() + c.id.len()).sum(),
        "handed over by the host, not copied",
        |p| {
            let reviewed: u32 = p
                .snapshot
                .source_calls
                .iter()
                .filter(|c| c.capability == Capability::Review.name())
                .map(|c| match c.outcome {
                    ctxpack_core::SourceOutcome::Answered(n) => n,
                    _ => 0,
                })
                .sum();
            format!(
                "{} entries, {} tokens, {reviewed} items reviewed by the policy ({:.2}x the included)",
                p.entries.len(),
                p.budget_used,
                f64::from(reviewed) / p.entries.len() as f64
            )
        },
    )?;
    let turns = conversation(10_000, 3);
    watch(
        "10k-message trim",
        trim(&turns, 8_000),
        turns.iter().map(|(_, text)| text.len()).sum(),
        "borrowed from the request",
        |p| {
            format!(
                "{} snapshot entries, {} kept",
                p.snapshot.entries.len(),
                p.entries.len()
            )
        },
    )
}

/// Assembles `w` once, with no counts kept and its retrieved candidates
/// handed over, and prints the peak heap above what was live before it
/// against its `input` bytes, the allocations it made, `what` the pack
/// holds and the time it took.
fn watch(
    name: &str,
    mut w: Workload,
    input: usize,
    how: &str,
    what: impl Fn(&ContextPack) -> String,
) -> Result<(), String> {
    w.config.count_cache_entries = 0;
    let builder = Builder::new(w.config.clone()).map_err(|e| e.to_string())?;
    // The stored answer itself is handed over, not a copy: a copy has no
    // spare capacity, and the heap figure moves with what the input frees
    // (3.22x the 10k pack's input with a copy, 2.60x with the answer as
    // parsed).
    let handed = match w.host.retrieve.take() {
        Some(Answer::Items(items)) => Some(items),
        other => {
            w.host.retrieve = other;
            None
        }
    };
    let mut host = InMemoryHost::new(w.host);
    Workload::hand_over(handed, &mut host);
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let allocations = ALLOCATIONS.load(Ordering::Relaxed);
    let started = std::time::Instant::now();
    let p = builder
        .assemble(&w.request, &mut host)
        .map_err(|e| e.to_string())?;
    let took = started.elapsed();
    let extra = PEAK.load(Ordering::Relaxed) - before;
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - allocations;
    println!(
        "{name}: input {:.2} MB ({how}), peak heap during the assembly {:.2} MB above what was live before it ({:.2}x the input), {allocations} allocations, {}, one run {:.1} ms",
        input as f64 / 1e6,
        extra as f64 / 1e6,
        extra as f64 / input as f64,
        what(&p),
        took.as_secs_f64() * 1e3
    );
    Ok(())
}
