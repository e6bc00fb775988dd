//! The scenario corpus, run natively and through the component under
//! wasmtime: both must give the expected outcome, byte for byte.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use ctxpack_conformance::{check_expected, render, scenarios};
use ctxpack_core::{ContextPack, Dispatch, Layer, Origin, Role, SourceOutcome, Tokenizers};
use ctxpack_host_example::{Reply, Runtime, run_component, run_native};
use std::collections::{HashMap, HashSet};
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

#[test]
fn component_outcomes_are_identical_to_native() {
    for (name, s) in scenarios() {
        let native = render(&run_native(&s));
        let wasm = render(&run_component(runtime(), &s).unwrap());
        assert_eq!(native, wasm, "{name}: native and component differ");
    }
}

#[test]
fn every_pack_keeps_the_invariants() {
    let tokenizers = Tokenizers::default();
    for (name, s) in scenarios() {
        let pack = match run_native(&s).reply {
            Reply::Pack(pack) => *pack,
            Reply::Handled(h) => match h.dispatch {
                Dispatch::Fallback(f) => f.pack,
                Dispatch::Skill(_) => continue,
            },
            Reply::Error(_) => continue,
        };
        check_invariants(&name, &s.request, &pack, &tokenizers);
    }
}

/// An entry's text cut where the budget counts it apart: a host text (or a
/// summary) into its citation or fence and its body; the request's own
/// text whole.
fn framed_parts(e: &ctxpack_core::PackEntry) -> Vec<&str> {
    let p = &e.provenance;
    if p.source_kind == "request" {
        return vec![e.text.as_str()];
    }
    let (head, tail) = if e.trust == ctxpack_core::TrustTier::Untrusted {
        (
            format!("<untrusted source=\"{}\">\n", p.reference.replace('"', "'")),
            "\n</untrusted>",
        )
    } else {
        (format!("[source: {}]\n", p.reference), "")
    };
    let body = e
        .text
        .strip_prefix(head.as_str())
        .and_then(|b| b.strip_suffix(tail))
        .unwrap_or_else(|| panic!("{}: host text not in its frame: {:?}", e.id, e.text));
    let (h, rest) = e.text.split_at(head.len());
    vec![h, body, &rest[body.len()..]]
}

fn check_invariants(
    name: &str,
    request: &ctxpack_core::AssembleRequest,
    pack: &ContextPack,
    tokenizers: &Tokenizers,
) {
    let snap = &pack.snapshot;
    let overhead = request.entry_overhead;
    // The budget is never exceeded and the accounting adds up.
    assert!(pack.budget_used <= pack.budget_limit, "{name}: over budget");
    if let Some(b) = request.budget {
        assert_eq!(pack.budget_limit, b, "{name}");
    }
    let charged: u32 = pack.entries.iter().map(|e| e.tokens + overhead).sum();
    assert_eq!(
        charged, pack.budget_used,
        "{name}: budget-used is not the sum"
    );
    assert_eq!(snap.tokens_used, pack.budget_used, "{name}");
    // Counts are exact: recount every included text (a host text's frame
    // and body apart, as the budget charges them).
    let counter = tokenizers.counter(request.tokenizer).unwrap();
    for e in &pack.entries {
        let recount: u32 = framed_parts(e).iter().map(|p| counter.count(p)).sum();
        assert_eq!(recount, e.tokens, "{name}: {} miscounted", e.id);
    }
    // Every candidate appears exactly once (counted by origin below); a
    // host may repeat an id, but only one candidate per id is included; the
    // pack holds exactly the included ones, in the same order.
    let included_ids: HashSet<&str> = snap
        .entries
        .iter()
        .filter(|e| e.included)
        .map(|e| e.id.as_str())
        .collect();
    assert_eq!(
        included_ids.len(),
        pack.entries.len(),
        "{name}: an id is included twice"
    );
    let included: Vec<&str> = snap
        .entries
        .iter()
        .filter(|e| e.included)
        .map(|e| e.id.as_str())
        .collect();
    let packed: Vec<&str> = pack.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(included, packed, "{name}");
    let expected_candidates = usize::from(!request.system_prompt.is_empty())
        + request.instructions.len()
        + usize::from(request.current_task.is_some())
        + usize::from(request.workflow.is_some())
        + request.conversation.len()
        + request.stage_summaries.len();
    let from = |origin: Origin| snap.entries.iter().filter(|e| e.origin == origin).count();
    assert_eq!(
        from(Origin::Request),
        expected_candidates,
        "{name}: a candidate is missing"
    );
    for call in &snap.source_calls {
        let origin = match call.capability.as_str() {
            "sources.retrieve" => Origin::Retrieval,
            "sources.recall-memory" => Origin::Memory,
            "sources.expand-graph" => Origin::Graph,
            "sources.repository-state" => Origin::Repository,
            "summarizer.summarize" => continue,
            other => panic!("{name}: unexpected source {other}"),
        };
        let answered = match call.outcome {
            SourceOutcome::Answered(n) => n as usize,
            _ => 0,
        };
        assert_eq!(
            from(origin),
            answered,
            "{name}: {} candidates lost",
            call.capability
        );
    }
    // No host text in L0; every included item has provenance.
    for e in &snap.entries {
        if e.origin != Origin::Request && e.included {
            assert_ne!(e.layer, Layer::L0, "{name}: host item {} in L0", e.id);
        }
        if e.included {
            assert!(
                e.provenance.is_some(),
                "{name}: {} without provenance",
                e.id
            );
        }
    }
    assert_eq!(
        pack.compression.entries_dropped as usize,
        snap.entries.len() - pack.entries.len(),
        "{name}"
    );
    // The messages hold the same context: L0 first, then the other
    // context, then exactly the kept turns; every host item is cited.
    let l0_text: Vec<&str> = pack
        .entries
        .iter()
        .filter(|e| e.layer == Layer::L0)
        .map(|e| e.text.as_str())
        .collect();
    if !l0_text.is_empty() {
        assert_eq!(pack.messages[0].content, l0_text.join("\n\n"), "{name}");
    }
    let turns_kept = pack
        .entries
        .iter()
        .filter(|e| e.section == ctxpack_core::Section::ConversationState)
        .count();
    let non_system = pack
        .messages
        .iter()
        .filter(|m| m.role != Role::System || m.tool_call_id.is_some())
        .count();
    assert!(non_system <= turns_kept, "{name}");
    for e in &pack.entries {
        if e.provenance.source_kind != "request" {
            assert!(
                e.text.contains(&e.provenance.reference.replace('"', "'")),
                "{name}: {} not cited",
                e.id
            );
        }
    }
    // The event, the metrics and the content reference agree with the pack.
    assert_eq!(pack.event.context_snapshot_id, snap.id, "{name}");
    assert_eq!(pack.event.tokens_used, pack.budget_used, "{name}");
    assert_eq!(
        snap.content_hash,
        ctxpack_core::content_id(&pack.text),
        "{name}"
    );
    let section_sum: u32 = pack
        .metrics
        .tokens_per_section
        .iter()
        .map(|s| s.tokens)
        .sum();
    assert_eq!(section_sum, pack.budget_used, "{name}: metrics per section");
    let dropped_sum: u32 = pack.metrics.dropped_by_reason.iter().map(|r| r.count).sum();
    assert_eq!(
        dropped_sum, pack.compression.entries_dropped,
        "{name}: metrics per reason"
    );
    // An over-budget drop is true: it needed more than remained.
    for e in &snap.entries {
        if let ctxpack_core::Reason::OverBudget(s) = &e.reason {
            assert!(
                s.needed > s.remaining,
                "{name}: {} dropped though it fit",
                e.id
            );
        }
    }
    // Mandatory sections are never compressed; a summarised candidate
    // points at an included summary that cites it.
    for e in &snap.entries {
        if e.layer == Layer::L0 {
            assert!(!e.compressed, "{name}: L0 entry {} compressed", e.id);
        }
        if let ctxpack_core::Reason::Summarized(id) = &e.reason {
            let summary = snap.entries.iter().find(|s| &s.id == id && s.included);
            let summary = summary.unwrap_or_else(|| panic!("{name}: {id} missing"));
            let cites = summary
                .provenance
                .as_ref()
                .map(|p| p.reference.as_str())
                .unwrap_or("");
            assert!(
                cites.split(',').any(|c| c == e.id),
                "{name}: {id} does not cite {}",
                e.id
            );
            assert!(e.compressed && summary.compressed, "{name}");
            assert!(
                summary.trust >= e.trust,
                "{name}: a summary is as trusted as its least source"
            );
        }
    }
    // The request's L0 is never dropped, and leads the pack.
    for e in &snap.entries {
        if e.layer == Layer::L0 && e.origin == Origin::Request {
            assert!(e.included, "{name}: L0 entry {} dropped", e.id);
        }
        assert!(e.included == e.reason.is_inclusion(), "{name}: {}", e.id);
    }
    let l0: Vec<_> = pack
        .entries
        .iter()
        .take_while(|e| e.layer == Layer::L0)
        .collect();
    assert!(
        pack.entries[l0.len()..]
            .iter()
            .all(|e| e.layer != Layer::L0),
        "{name}"
    );
    let l0_cost: u32 = l0.iter().map(|e| e.tokens + overhead).sum();
    assert_eq!(snap.stable_prefix_tokens, l0_cost, "{name}");
    // The kept conversation is valid: no tool result without its call, no
    // call without its results.
    let kept_turns: Vec<usize> = pack
        .entries
        .iter()
        .filter_map(|e| e.id.strip_prefix("turn-")?.parse().ok())
        .collect();
    let mut calls: HashMap<&str, bool> = HashMap::new();
    for &i in &kept_turns {
        let t = &request.conversation[i];
        match (t.role, t.tool_call_id.as_deref()) {
            (Role::Assistant, Some(id)) => {
                calls.insert(id, false);
            }
            (Role::Tool, Some(id)) => {
                let answered = calls.get_mut(id);
                assert!(answered.is_some(), "{name}: turn-{i} kept without its call");
                if let Some(a) = answered {
                    *a = true;
                }
            }
            _ => {}
        }
    }
    for (j, t) in request.conversation.iter().enumerate() {
        if let (Role::Tool, Some(id)) = (t.role, t.tool_call_id.as_deref())
            && calls.contains_key(id)
        {
            assert!(
                kept_turns.contains(&j),
                "{name}: result turn-{j} split from its call"
            );
        }
    }
    // The kept turns are one contiguous run ending at the newest turn
    // (orphaned results inside it excepted).
    if let (Some(&first), Some(&last)) = (kept_turns.first(), kept_turns.last()) {
        assert_eq!(
            last,
            request.conversation.len() - 1,
            "{name}: newest turn not kept"
        );
        for k in first..=last {
            let orphan = snap.entries.iter().any(|e| {
                e.id == format!("turn-{k}") && e.reason == ctxpack_core::Reason::OrphanToolResult
            });
            assert!(kept_turns.contains(&k) || orphan, "{name}: gap at turn-{k}");
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
        .instantiate(Default::default(), &Default::default())
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

#[test]
fn every_host_capability_is_called_at_most_once_per_assembly() {
    for (name, s) in scenarios() {
        let out = run_component(runtime(), &s).unwrap();
        for (capability, n) in &out.host_calls {
            assert_eq!(*n, 1, "{name}: {capability} called {n} times");
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
    let scenario: ctxpack_host_example::Scenario = serde_json::from_value(serde_json::json!({
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
            ctxpack_core::SnapshotStatus::Truncated
        );
        assert!(pack.text.contains("lorem ipsum"));
    } else {
        assert!(big_tokens > 1_000_000, "{big_tokens}");
    }
    let wasm = run_component(runtime(), &scenario).unwrap();
    assert_eq!(render(&native), render(&wasm));
}
