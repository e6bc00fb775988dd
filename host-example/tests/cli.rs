//! The host example as a user runs it.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ctxpack-host-example"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn assembles_the_bundled_scenario_through_the_component() {
    let out = run(&["assemble", "tests/scenarios/seed-002-happy-path.json"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("pack sess-42-router-pack"), "{stdout}");
    assert!(
        stdout.contains("Status: running, Stage: reconcile"),
        "{stdout}"
    );
    assert!(
        stdout.contains("workflow-status  workflow-status     L0"),
        "{stdout}"
    );
}

#[test]
fn native_and_component_print_the_same_json() {
    let scenario = "tests/scenarios/tool-call-pairs.json";
    let wasm = run(&["assemble", scenario, "--json"]);
    let native = run(&["assemble", scenario, "--json", "--native"]);
    assert!(wasm.status.success() && native.status.success());
    assert_eq!(wasm.stdout, native.stdout);
}

#[test]
fn a_refused_request_prints_the_reason_and_exits_1() {
    let out = run(&["assemble", "tests/scenarios/l0-over-budget.json"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("mandatory layer needs 47 tokens but the budget is 20"),
        "{stdout}"
    );
}

#[test]
fn bad_input_names_the_field_and_exits_2() {
    let dir = std::env::temp_dir().join(format!("ctxpack-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"description": "d", "request": {"context": {"trace-id": "t"}, "query": "q",
            "tokenizer": "o200k-base", "budget": "lots", "entry-overhead": 0,
            "system-prompt": "s", "keep-last": 1}}"#,
    )
    .unwrap();
    let out = run(&["assemble", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("request.budget"), "{stderr}");

    let out = run(&["assemble", "no/such/file.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no/such/file.json"));

    let out = run(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown command `frobnicate`"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn evaluate_reports_the_same_figures_through_the_component_and_natively() {
    let args = [
        "evaluate",
        "host-example/routes/assistant.yaml",
        "host-example/routes/assistant-queries.tsv",
    ];
    let wasm = run(&args);
    let native = run(&[&args[..], &["--native"]].concat());
    assert!(wasm.status.success(), "{}", text(&wasm.stderr));
    assert_eq!(wasm.stdout, native.stdout);
    let report = text(&wasm.stdout);
    // Shown in CI logs: the figures users tune thresholds with.
    eprintln!("{report}");
    let accuracy: f64 = report
        .split_once(" = ")
        .and_then(|(_, rest)| rest.split_once('%'))
        .map(|(pct, _)| pct.parse().unwrap())
        .unwrap();
    // A floor, so a change that makes routing worse fails here.
    assert!(accuracy >= 88.0, "accuracy fell to {accuracy}%");
    for section in [
        "precision",
        "misspelled",
        "low-confidence fired",
        "threshold 0.5",
    ] {
        assert!(report.contains(section), "{section} missing:\n{report}");
    }
}

#[test]
fn route_and_handle_commands() {
    let out = run(&[
        "route",
        "host-example/routes/assistant.yaml",
        "Will it rain in Porto Alegre tomorrow?",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.starts_with("route weather  skill weather-skill"),
        "{stdout}"
    );
    assert!(stdout.contains("entity city = Porto Alegre"), "{stdout}");
    assert!(stdout.contains("matched \"will it rain\""), "{stdout}");

    let out = run(&["handle", "tests/scenarios/handle-confident-skill.json"]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("dispatch: skill weather-skill"), "{stdout}");
    assert!(stdout.contains("host calls: none"), "{stdout}");

    let out = run(&["handle", "tests/scenarios/seed-002-happy-path.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("needs a scenario with a `router`"));
}

#[test]
fn diff_says_what_changed_between_turns_and_why() {
    let args = [
        "diff",
        "tests/scenarios/handle-fallback-rag.json",
        "tests/scenarios/handle-fallback-rag-next-turn.json",
    ];
    let wasm = run(&args);
    let native = run(&[&args[..], &["--native"]].concat());
    assert!(wasm.status.success(), "{}", text(&wasm.stderr));
    assert_eq!(wasm.stdout, native.stdout);
    let report = text(&wasm.stdout);
    let line = |id: &str| {
        report
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(id))
            .unwrap_or_else(|| panic!("{id} missing:\n{report}"))
            .to_owned()
    };
    assert!(line("kb-season").starts_with("entered"), "{report}");
    assert!(
        line("kb-season").contains("policy denied: embargoed"),
        "{report}"
    );
    // The longer conversation squeezes a chunk: cut into the room left,
    // it has fewer tokens, and the diff says so.
    assert!(line("kb-hotel").starts_with("retokened"), "{report}");
    assert!(
        line("kb-hotel").contains("->  included (within budget, 26 tokens)"),
        "{report}"
    );
    assert!(line("turn-2").contains("absent  ->  included"), "{report}");
}

#[test]
fn resource_limits_stop_a_call_and_say_which_limit() {
    let scenario = "tests/scenarios/seed-002-happy-path.json";
    // A runaway request: seed-002 with a 16 MB turn, which the instance
    // must take into its memory. Within 16 MB it cannot.
    let mut runaway: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root().join(scenario)).unwrap()).unwrap();
    runaway["request"]["conversation"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"role": "user", "content": "ask again ".repeat(1_600_000)}));
    let path = std::env::temp_dir().join(format!("ctxpack-runaway-{}.json", std::process::id()));
    std::fs::write(&path, runaway.to_string()).unwrap();
    let path_arg = path.to_str().unwrap();
    let out = run(&["assemble", path_arg, "--max-memory-mb", "16"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("memory limit hit"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // With room for it, the same request is assembled: the turn is the
    // question being answered, counted whole and over the budget, and the
    // assembly says so (exit 1, a failed assembly, not a limit).
    let roomy = run(&["assemble", path_arg, "--max-memory-mb", "512"]);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(roomy.status.code(), Some(1), "{}", text(&roomy.stderr));
    let said = text(&roomy.stdout) + &text(&roomy.stderr);
    assert!(
        said.contains("mandatory layer needs 3200027 tokens but the budget is 400"),
        "{said}"
    );

    let out = run(&["assemble", scenario, "--fuel", "100000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("fuel limit hit"));

    // Generous limits change nothing.
    let limited = run(&[
        "assemble",
        scenario,
        "--json",
        "--fuel",
        "100000000000",
        "--max-memory-mb",
        "512",
    ]);
    let free = run(&["assemble", scenario, "--json"]);
    assert!(limited.status.success(), "{}", text(&limited.stderr));
    assert_eq!(limited.stdout, free.stdout);

    let out = run(&["assemble", scenario, "--fuel", "lots"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("`--fuel` takes a whole number"));
}
