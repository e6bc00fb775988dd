//! The scenario corpus, run natively and through the component under
//! wasmtime: both must give the expected outcome, byte for byte.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use ctxpack_conformance::invariants::{check as check_invariants, check_failure};
use ctxpack_conformance::{check_expected, render, scenarios};
use ctxpack_core::{Dispatch, Tokenizers};
use ctxpack_host::Runtime;
use ctxpack_scenario::{InMemoryHost, Reply, run_component, run_native};
use std::sync::OnceLock;

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::load_bundled().unwrap())
}

#[test]
fn corpus_is_not_empty() {
    assert!(scenarios().len() >= 10, "the corpus lost scenarios");
}

#[test]
fn native_outcomes_match_expected() {
    let failures: Vec<String> = scenarios()
        .iter()
        .filter_map(|(name, s)| check_expected(name, &run_native(s)))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Every scenario states the facts it exists for, and every engine keeps
/// them — checked apart from the expected files, so a bless that changes
/// what a scenario tests fails here.
#[test]
fn every_scenario_keeps_the_facts_it_states() {
    let mut broken = Vec::new();
    for (name, s) in scenarios() {
        let expect = s
            .expect
            .clone()
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| panic!("{name}: states no `expect` facts"));
        for (engine, outcome) in [
            ("native", run_native(&s)),
            ("wasmtime", run_component(runtime(), &s).unwrap()),
        ] {
            for fact in expect.broken(&outcome) {
                broken.push(format!("{name} ({engine}): {fact}"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// Generated requests and host answers (every section, profile,
/// tokenizer and answer shape) give the same outcome through the
/// component as natively.
#[test]
fn generated_scenarios_are_identical_under_wasmtime() {
    use ctxpack_conformance::generate::{Source, scenario};
    for seed in 0..120 {
        same_under_wasmtime(
            &format!("seed {seed}"),
            &scenario(&mut Source::seeded(seed)),
        );
    }
}

/// Every key the host example prints (its JSON is the outcome as the
/// expected files hold it) is spelled as the WIT spells it: a record
/// field or a case of a variant or enum. Checked over every scenario's
/// outcome, failures and failed snapshots included.
#[test]
fn every_printed_key_is_spelled_as_in_the_wit() {
    let wit: String = ["types.wit", "world.wit"]
        .iter()
        .map(|f| {
            std::fs::read_to_string(ctxpack_conformance::root().join("../wit").join(f)).unwrap()
        })
        .collect();
    let mut names = std::collections::BTreeSet::new();
    for line in wit.lines() {
        let line = line.trim();
        if line.starts_with("///") {
            continue;
        }
        // `name: type,` (a field) or `name,` / `name(payload),` (a case).
        let head: String = line
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let rest = &line[head.len()..];
        if !head.is_empty()
            && (rest.starts_with(':') || rest.starts_with(',') || rest.starts_with('('))
        {
            names.insert(head);
        }
    }
    // The host example's own wrapper: an outcome is a reply (a pack, a
    // handling or a failure) and the calls it took, by capability.
    let own = ["reply", "pack", "handled", "failed", "host-calls"];
    fn keys(v: &serde_json::Value, parent: &str, out: &mut Vec<(String, String)>) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    if parent != "host-calls" {
                        out.push((parent.to_owned(), k.clone()));
                    }
                    keys(v, k, out);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| keys(v, parent, out)),
            _ => {}
        }
    }
    let mut wrong = std::collections::BTreeSet::new();
    for (name, s) in scenarios() {
        let value = serde_json::to_value(run_native(&s)).unwrap();
        let mut found = Vec::new();
        keys(&value, "", &mut found);
        for (parent, key) in found {
            if !names.contains(&key) && !own.contains(&key.as_str()) {
                wrong.insert(format!("{name}: `{key}` (in `{parent}`)"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "keys not in the WIT:\n{}",
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn component_outcomes_are_identical_to_native() {
    for (name, s) in scenarios() {
        same_under_wasmtime(&name, &s);
    }
}

/// `s` gives the same outcome through the component as natively, and the
/// stores were asked the same, call for call: what the other hosts replay
/// is what the component asks under any engine.
fn same_under_wasmtime(name: &str, s: &ctxpack_scenario::Scenario) {
    let native = run_native(s);
    let wasm = run_component(runtime(), s).unwrap();
    assert_eq!(
        render(&native),
        render(&wasm),
        "{name}: native and component differ"
    );
    assert_eq!(native.recorded, wasm.recorded, "{name}: the calls differ");
    assert_eq!(
        tally(&native),
        native.host_calls,
        "{name}: recorded and counted calls differ"
    );
}

/// The recorded calls, counted by capability (an independent count of
/// what the stores count themselves).
fn tally(outcome: &ctxpack_scenario::Outcome) -> std::collections::BTreeMap<String, u32> {
    let mut calls = std::collections::BTreeMap::new();
    for r in &outcome.recorded {
        let (name, _) = r.call.as_object().unwrap().iter().next().unwrap();
        let call: ctxpack_core::Call = serde_json::from_value(r.call.clone()).unwrap();
        assert_eq!(call.import().function(), name, "{name}");
        *calls.entry(call.capability().to_owned()).or_default() += 1;
    }
    calls
}

#[test]
fn every_pack_keeps_the_invariants() {
    let tokenizers = Tokenizers::new();
    for (name, s) in scenarios() {
        match &run_native(&s).reply {
            Reply::Failed(f) => check_failure(&name, &s.request, &s.config, f),
            reply => {
                if let Some(pack) = reply.pack() {
                    check_invariants(&name, &s.request, &s.config, pack, &tokenizers);
                }
            }
        }
    }
}

#[test]
fn the_component_imports_only_ctxpack_interfaces() {
    // `Runtime` links nothing but ctxpack's own imports; instantiating
    // proves the component needs nothing else, and the import list proves
    // it asks for no WASI.
    let imports = runtime().imports();
    eprintln!("component imports: {imports:?}");
    assert!(!imports.is_empty());
    for name in &imports {
        assert!(
            name.starts_with("ctxpack:context/"),
            "unexpected import {name}"
        );
        assert!(!name.contains("wasi"), "WASI import {name}");
    }
    let s = &scenarios()[0].1;
    assert!(run_component(runtime(), s).is_ok());
}

#[test]
fn one_instance_serves_many_assemblies() {
    let mut instance = runtime()
        .instantiate(InMemoryHost::default(), &Default::default())
        .unwrap()
        .unwrap();
    for (name, s) in scenarios() {
        // One builder, one configuration: the scenarios built with another
        // get their own instance in the other tests.
        if s.config != ctxpack_core::BuilderConfig::default() {
            continue;
        }
        if s.router.is_some() {
            continue;
        }
        let Reply::Pack(expected) = run_native(&s).reply else {
            continue;
        };
        let got = instance.assemble(&s.request).unwrap().unwrap();
        assert_eq!(got, *expected, "{name}");
    }
}

#[test]
fn the_confident_path_calls_no_host_capability_under_wasmtime() {
    let (_, mut s) = scenarios()
        .into_iter()
        .find(|(n, _)| n == "handle-confident-skill")
        .unwrap();
    let out = run_component(runtime(), &s).unwrap();
    let Reply::Handled(h) = &out.reply else {
        panic!("{:?}", out.reply)
    };
    assert!(matches!(h.dispatch, Dispatch::Skill(_)));
    assert!(out.host_calls.is_empty(), "{:?}", out.host_calls);
    // The same stores on a query the router cannot place are called, so
    // the count above is live, not a counter that never moves.
    s.request.query = "Help me plan a trip".into();
    let out = run_component(runtime(), &s).unwrap();
    assert_eq!(out.host_calls.get("sources.retrieve"), Some(&1));
    assert_eq!(out.host_calls.get("policy.review"), Some(&1));
}

/// Every source and the summariser are called at most once per
/// assembly; the policy at most once per review round.
#[test]
fn every_host_capability_is_called_at_most_once_per_assembly() {
    for (name, s) in scenarios() {
        let out = run_component(runtime(), &s).unwrap();
        for (capability, n) in &out.host_calls {
            let most = match capability.as_str() {
                "policy.review" => ctxpack_core::REVIEW_ROUNDS,
                // Asked in rounds, each with every text a pass needed:
                // a few per step, and ⌈log₁₆ bytes⌉ + 1 for a cut.
                "counter.count-tokens" => 40,
                _ => 1,
            };
            assert!(*n <= most, "{name}: {capability} called {n} times");
        }
    }
}

/// A 50-turn conversation replayed turn by turn under a budget that forces
/// trimming: the share of each turn's rendered text that is a byte-identical
/// prefix of the previous turn's — what a provider's prompt cache can reuse.
fn replay_prefix_share(cut_step: u32) -> (f64, Vec<u32>) {
    let mut config = ctxpack_core::BuilderConfig::default();
    config.plan.cut_step = cut_step;
    let builder = ctxpack_core::Builder::new(config).unwrap();
    let topics = [
        "invoices",
        "the deploy",
        "the garden",
        "Lisbon",
        "the parser",
    ];
    let mut turns = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    let mut used = Vec::new();
    for t in 0..50 {
        let (role, content) = if t % 2 == 0 {
            (
                "user",
                format!(
                    "Question {t}: what should we do next about {}?",
                    topics[t % 5]
                ),
            )
        } else {
            (
                "assistant",
                format!(
                    "Answer {t}: here is a short plan for {}, in three steps.",
                    topics[t % 5]
                ),
            )
        };
        turns.push(serde_json::json!({"role": role, "content": content}));
        let request: ctxpack_core::AssembleRequest = serde_json::from_value(serde_json::json!({
            "context": {"session-id": "replay", "trace-id": format!("t{t}")},
            "query": "next", "tokenizer": "o200k-base", "budget": 400, "entry-overhead": 3,
            "system-prompt": "You are a planning assistant. Keep answers short.",
            "workflow": {"status": "running", "stage-id": "plan"},
            "conversation": turns, "keep-last": 40
        }))
        .unwrap();
        let pack = builder
            .assemble(&request, &mut ctxpack_core::NoHost)
            .unwrap();
        assert!(pack.budget_used <= 400);
        used.push(pack.budget_used);
        texts.push(pack.text);
    }
    let shares: Vec<f64> = texts
        .windows(2)
        .map(|w| {
            let common = w[0]
                .bytes()
                .zip(w[1].bytes())
                .take_while(|(a, b)| a == b)
                .count();
            common as f64 / w[1].len() as f64
        })
        .collect();
    (shares.iter().sum::<f64>() / shares.len() as f64, used)
}

#[test]
fn cut_steps_keep_the_rendered_prefix_stable_across_turns() {
    let (by_one, used_one) = replay_prefix_share(1);
    let (by_eight, used_eight) = replay_prefix_share(8);
    eprintln!(
        "50-turn replay: mean stable-prefix share {:.1}% with cut step 1, {:.1}% with cut step 8; mean tokens used {:.0} and {:.0} of 400",
        by_one * 100.0,
        by_eight * 100.0,
        used_one.iter().sum::<u32>() as f64 / 50.0,
        used_eight.iter().sum::<u32>() as f64 / 50.0
    );
    assert!(by_eight > by_one + 0.2, "{by_eight} vs {by_one}");
}

#[test]
fn a_precompiled_artifact_is_reused_and_a_bad_one_recompiled() {
    let dir = std::env::temp_dir().join(format!("ctxpack-cwasm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ctxpack.wasm");
    std::fs::copy(ctxpack_artifacts::COMPONENT_PATH, &path).unwrap();
    let artifacts = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
            .collect()
    };
    let (_, s) = &scenarios()[0];
    let expected = render(&run_native(s));

    let first = Runtime::load(&path).unwrap();
    assert_eq!(artifacts().len(), 1, "compiling leaves one artifact");
    assert_eq!(render(&run_component(&first, s).unwrap()), expected);

    let second = Runtime::load(&path).unwrap();
    assert_eq!(
        artifacts().len(),
        1,
        "the artifact is reused, not duplicated"
    );
    assert_eq!(render(&run_component(&second, s).unwrap()), expected);

    // A damaged artifact is not trusted: the component is compiled again.
    // (The loaded ones map the artifact: let them go before it changes.)
    drop((first, second));
    std::fs::write(&artifacts()[0], b"not a compiled component").unwrap();
    let third = Runtime::load(&path).unwrap();
    assert_eq!(render(&run_component(&third, s).unwrap()), expected);
    assert!(
        std::fs::read(&artifacts()[0]).unwrap().len() > 1000,
        "rewritten"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_enormous_host_text_is_counted_and_dropped_not_a_crash() {
    // 10 MB in one retrieved item, beside a small one, through the
    // component and natively.
    let big = "lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(180_000);
    assert!(big.len() > 10_000_000);
    let scenario: ctxpack_scenario::Scenario = serde_json::from_value(serde_json::json!({
        "description": "enormous",
        "config": {"profile": {"rag": {"retrieve-limit": 5}}},
        "request": {
            "context": {"trace-id": "t"}, "query": "q", "tokenizer": "o200k-base",
            "budget": 500, "entry-overhead": 0, "system-prompt": "s", "keep-last": 1
        },
        "host": {
            "retrieve": {"items": [
                {"id": "big", "section": "relevant-knowledge", "trust": "trusted", "score": 0.9,
                 "provenance": {"source-kind": "chunk", "reference": "big"}, "text": big},
                {"id": "small", "section": "relevant-knowledge", "trust": "trusted", "score": 0.5,
                 "provenance": {"source-kind": "chunk", "reference": "small"}, "text": "a small chunk"}
            ]},
            "policy": {},
            "summarizer": {"error": "no summariser"}
        }
    }))
    .unwrap();
    let native = run_native(&scenario);
    let Reply::Pack(pack) = &native.reply else {
        panic!("{:?}", native.reply)
    };
    let reason = |id: &str| {
        pack.snapshot
            .entries
            .iter()
            .find(|e| e.id == id)
            .map(|e| (e.included, e.tokens))
            .unwrap()
    };
    let (big_in, big_tokens) = reason("big");
    assert!(reason("small").0);
    assert!(pack.budget_used <= 500);
    // Never whole: either cut at a token boundary into the section's
    // reserve (the summariser is down, so the snapshot says truncated) or
    // dropped with its full, exact count.
    if big_in {
        assert!(big_tokens < 500, "{big_tokens}");
        assert_eq!(
            pack.snapshot.status,
            [ctxpack_core::SnapshotStatus::Truncated]
        );
        assert!(pack.text.contains("lorem ipsum"));
    } else {
        assert!(big_tokens > 1_000_000, "{big_tokens}");
    }
    let wasm = run_component(runtime(), &scenario).unwrap();
    assert_eq!(render(&native), render(&wasm));
}

/// Driven with JSON text (the `json` interface, one string each way per
/// step, as the Python and JavaScript hosts drive it), natively and
/// through the component, every scenario's outcome is its expected file
/// byte for byte, but for the file's indentation: the text the engine
/// wrote, not a value parsed back (which can move a float's last digit).
#[test]
fn json_driven_outcomes_match_expected() {
    use ctxpack_scenario::json;
    let mut failures = Vec::new();
    for (name, s) in scenarios() {
        let path = ctxpack_conformance::root().join(format!("expected/{name}.json"));
        let expected = minify(&std::fs::read_to_string(&path).unwrap());
        for (engine, (outcome, text)) in [
            ("native", json::run_native(&s).unwrap()),
            ("wasmtime", json::run_component(runtime(), &s).unwrap()),
        ] {
            let calls = serde_json::to_string(&outcome.host_calls).unwrap();
            let got = format!(r#"{{"reply":{text},"host-calls":{calls}}}"#);
            if got != expected {
                failures.push(format!("{name} ({engine}):\n{got}\n{expected}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// JSON text without the whitespace between its tokens.
fn minify(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if !c.is_ascii_whitespace() {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

/// Generated requests and host answers (every section, profile,
/// tokenizer and answer shape), driven with JSON natively and through the
/// component, give the outcome and the calls of the typed native run: the
/// outcome's text is the native reply's JSON, byte for byte.
#[test]
fn generated_scenarios_are_identical_driven_with_json() {
    use ctxpack_conformance::generate::{Source, scenario};
    use ctxpack_scenario::json;
    for seed in 0..120 {
        let s = scenario(&mut Source::seeded(seed));
        let native = run_native(&s);
        let expected = serde_json::to_string(&native.reply).unwrap();
        for (engine, (outcome, text)) in [
            ("native", json::run_native(&s).unwrap()),
            ("wasmtime", json::run_component(runtime(), &s).unwrap()),
        ] {
            assert_eq!(
                text, expected,
                "seed {seed} ({engine}): the outcome differs"
            );
            assert_eq!(
                outcome.host_calls, native.host_calls,
                "seed {seed} ({engine}): the host calls differ"
            );
        }
    }
}

/// Strings nobody wrote — any Unicode, very long, controls, a dated model
/// name in Japanese — in every string field of the request and the host's
/// answers (`generate::wild_scenario`) get a pack or a refusal naming the
/// field, natively, through the component by typed values and by JSON
/// steps, the same byte for byte; nothing traps.
#[test]
fn strings_of_any_unicode_are_answered_the_same_and_never_trap() {
    use ctxpack_conformance::generate::{Source, wild_scenario};
    use ctxpack_scenario::json;
    let (mut packs, mut refused) = (0, 0);
    for seed in 0..60 {
        let s = wild_scenario(&mut Source::seeded(seed ^ 0x3113));
        let outcome = run_native(&s);
        match &outcome.reply {
            Reply::Failed(f) => {
                refused += 1;
                assert!(!f.error.to_string().is_empty(), "wild {seed}");
            }
            _ => packs += 1,
        }
        let native = render(&outcome);
        let wasm = run_component(runtime(), &s)
            .unwrap_or_else(|e| panic!("wild {seed}: the component failed: {e}"));
        assert_eq!(render(&wasm), native, "wild {seed}: the component differs");
        let (_, steps) = json::run_component(runtime(), &s)
            .unwrap_or_else(|e| panic!("wild {seed}: the JSON steps failed: {e}"));
        let want = serde_json::to_string(&outcome.reply).unwrap();
        assert_eq!(steps, want, "wild {seed}: JSON steps differ");
    }
    assert!(
        packs >= 10 && refused >= 5,
        "{packs} packs, {refused} refused"
    );
}

/// Numbers at the edges (`generate::edge_scenario`: signed zeros,
/// subnormals, the largest finite, …) mean the same however a host spells
/// them: the scenario as JSON with every −0 written `0` and every number
/// as JavaScript's JSON writes it (`1e+21`) gives the native outcome byte
/// for byte — the snapshot's id included — natively and through the
/// component, by typed values and by JSON steps.
#[test]
fn edge_numbers_give_one_outcome_however_they_are_spelt() {
    use ctxpack_conformance::generate::{Source, edge_scenario};
    use ctxpack_scenario::json;
    let mut zeros = 0;
    for seed in 0..40 {
        let s = edge_scenario(&mut Source::seeded(seed ^ 0xed6e));
        let native = render(&run_native(&s));
        let text = serde_json::to_string(&s).unwrap();
        zeros += text.matches("-0.0").count();
        // As JSON.stringify writes it: −0 as 0, an exponent with its sign.
        let js = text
            .replace(":-0.0,", ":0,")
            .replace(":-0.0}", ":0}")
            .replace("e21", "e+21")
            .replace("e300", "e+300")
            .replace("e308", "e+308");
        let respelt = ctxpack_scenario::scenario::parse(&js).unwrap();
        assert_eq!(
            render(&run_native(&respelt)),
            native,
            "edge {seed}: respelt"
        );
        let wasm = render(&run_component(runtime(), &respelt).unwrap());
        assert_eq!(wasm, native, "edge {seed}: the component differs");
        let (_, steps) = json::run_component(runtime(), &respelt).unwrap();
        let want = serde_json::to_string(&run_native(&s).reply).unwrap();
        assert_eq!(steps, want, "edge {seed}: JSON steps differ");
    }
    assert!(
        zeros >= 20,
        "only {zeros} signed zeros: the family lost its point"
    );
}

/// Counting and trimming a chat give the same numbers natively and in the
/// component, for every chat of the corpus, with every strategy.
#[test]
fn a_chat_counts_and_trims_the_same_in_the_component() {
    let mut instance = runtime()
        .instantiate(InMemoryHost::default(), &Default::default())
        .unwrap()
        .unwrap();
    let native = ctxpack_core::Builder::new(Default::default()).unwrap();
    let mut compared = 0;
    for (name, s) in scenarios() {
        let Some(chat) = &s.request.chat else {
            continue;
        };
        let count = ctxpack_core::CountRequest {
            model: s.request.model.clone(),
            tokenizer: s.request.tokenizer.clone(),
            chat: Some(chat.clone()),
            texts: vec![s.request.query.clone()],
            ..Default::default()
        };
        let here = native.count(&count);
        assert_eq!(instance.count(&count).unwrap(), here, "{name}");
        let total = here.as_ref().map_or(0, |c| c.total);
        for (strategy, max) in [("last", total / 2), ("first", total / 3), ("last", total)] {
            let trim: ctxpack_core::TrimRequest = serde_json::from_value(serde_json::json!({
                "chat": chat, "max-tokens": max, "model": s.request.model,
                "tokenizer": s.request.tokenizer, "strategy": strategy, "allow-partial": true
            }))
            .unwrap();
            let here = native
                .trim(&trim, &mut ctxpack_core::NoHost)
                .map_err(|f| f.error);
            assert_eq!(
                instance.trim(&trim).unwrap(),
                here,
                "{name} {strategy} {max}"
            );
            compared += 1;
        }
    }
    assert!(compared >= 15, "{compared}");
}
