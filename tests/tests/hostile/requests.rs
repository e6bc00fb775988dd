//! Hostile requests: budgets of zero and `u32::MAX`, items of ten
//! megabytes, a million tiny candidates, cyclic graph expansions,
//! configurations that are not valid.

use super::*;
use ctxpack_core::{Role, SnapshotEntry};

#[test]
fn zero_and_huge_budgets_give_a_pack_or_an_error_naming_the_numbers() {
    let host = host_with("", json!(null));
    // Zero: the system prompt alone is over it.
    let s = scenario(host.clone(), 0);
    match &both("zero", &s).reply {
        Reply::Failed(Failure {
            error:
                Error::MandatoryOverBudget {
                    mandatory_tokens,
                    budget,
                },
            snapshot: Some(snap),
        }) => {
            assert_eq!(*budget, 0);
            assert!(*mandatory_tokens > 0);
            assert_eq!(snap.status, [SnapshotStatus::Failed]);
            assert_eq!(snap.token_budget, 0);
            // No host was asked: L0 is checked first.
            assert!(snap.source_calls.is_empty());
        }
        other => panic!("zero: {other:?}"),
    }
    // Zero with only the question being answered mandatory: it is over
    // it too, and the failure says so.
    let mut s = scenario(host.clone(), 0);
    s.request.system_prompt.clear();
    match &both("zero, a question", &s).reply {
        Reply::Failed(Failure {
            error: Error::MandatoryOverBudget { budget: 0, .. },
            snapshot: Some(_),
        }) => {}
        other => panic!("zero, a question: {other:?}"),
    }
    // Zero with nothing mandatory: an empty pack, every candidate recorded.
    s.request.conversation.clear();
    let p = pack("zero, no L0", &both("zero, no L0", &s));
    assert!(p.entries.is_empty());
    let recorded: u32 = p.snapshot.entries.iter().map(|e| e.candidates()).sum();
    assert!(recorded >= 5, "{recorded}");
    // The largest budget there is.
    let s = scenario(host.clone(), u32::MAX);
    let p = pack("huge", &both("huge", &s));
    assert_eq!(p.budget_limit, u32::MAX);
    assert!(p.entries.len() >= 7);
    // Above the model window: refused, naming the field.
    let mut s = scenario(host, u32::MAX);
    s.config.plan.model_window = Some(128_000);
    match &both("above window", &s).reply {
        Reply::Failed(f) => {
            assert!(f.error.to_string().contains("request.budget"), "{f}");
            assert!(f.snapshot.is_none(), "an invalid request has no snapshot");
        }
        other => panic!("above window: {other:?}"),
    }
}

#[test]
fn a_ten_megabyte_request_item_is_counted_not_a_crash() {
    let big = "all work and no play makes a dull assembly. ".repeat(240_000);
    assert!(big.len() > 10_000_000);
    // As the newest conversation turn, the question being answered,
    // over a small budget: counted whole, and refused with both numbers.
    let e = newest_turn_over_a_small_budget("10 MB turn", &big);
    assert_eq!(e.counted, Counted::Exact);
    assert!(e.tokens > 1_000_000);
    // As the system prompt: mandatory, so refused with both numbers.
    let mut s = scenario(host_with("", json!(null)), 500);
    s.request.system_prompt = big;
    match &both("10 MB system prompt", &s).reply {
        Reply::Failed(Failure {
            error: Error::MandatoryOverBudget {
                mandatory_tokens, ..
            },
            ..
        }) => assert!(*mandatory_tokens > 1_000_000),
        other => panic!("{other:?}"),
    }
}

/// A turn of 3.6 MB of mixed spaces is one pre-tokenising piece: the
/// expression engine tiktoken-rs counts with runs out of stack on it (and
/// panicked inside the component when the core counted with it). It is
/// counted, whole, and dropped over a small budget, the same natively and
/// through the component.
#[test]
fn a_megabyte_whitespace_turn_is_counted_not_a_crash() {
    let spaces = " \u{a0}".repeat(1_200_000);
    newest_turn_over_a_small_budget("whitespace turn", &spaces);
}

/// Assembles `content` as the newest conversation turn, the question
/// being answered, under a 500-token budget, on both engines: refused
/// as mandatory over the budget, the turn's entry in the failed snapshot.
fn newest_turn_over_a_small_budget(name: &str, content: &str) -> SnapshotEntry {
    let mut s = scenario(host_with("", json!(null)), 500);
    s.request
        .conversation
        .push(serde_json::from_value(json!({"role": "user", "content": content})).unwrap());
    let Reply::Failed(Failure {
        error:
            Error::MandatoryOverBudget {
                mandatory_tokens,
                budget: 500,
            },
        snapshot: Some(snap),
    }) = &both(name, &s).reply
    else {
        panic!("{name}: not refused as mandatory over the budget");
    };
    let e = snap
        .entries
        .iter()
        .find(|e| e.id == "turn-2")
        .unwrap()
        .clone();
    assert!(*mandatory_tokens > u64::from(e.tokens), "{name}");
    assert_eq!(e.reason, Reason::AssemblyFailed);
    e
}

#[test]
fn a_million_tiny_candidates_are_each_recorded() {
    // A million conversation turns, a budget for a few of them.
    let mut s = scenario(json!({}), 400);
    s.config.profile = ctxpack_core::Profile::Passthrough;
    s.request.conversation = (0..1_000_000)
        .map(|i| ctxpack_core::ConversationTurn {
            role: if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            },
            content: "ok".into(),
            tool_call_id: None,
            attached_tokens: None,
        })
        .collect();
    s.request.keep_last = 1_000_000;
    // The turns never reached are one run: the snapshot is a few entries,
    // and the component hands it back within wasmtime's default transfer
    // limit (a million entries did not fit in it).
    let native = run_native(&s);
    let wasm = run_component(runtime(), &s).unwrap();
    let p = pack("a million turns", &native);
    // Compared as values: printing a million turns on a failure helps no
    // one.
    assert!(p == pack("a million turns, wasm", &wasm), "engines differ");
    invariants::check("a million turns", &s.request, &s.config, &p, tokenizers());
    let recorded: u32 = p.snapshot.entries.iter().map(|e| e.candidates()).sum();
    assert_eq!(recorded, 1 + 1_000_000);
    assert!(
        p.snapshot.entries.len() < 1_000,
        "{}",
        p.snapshot.entries.len()
    );
    assert!(p.entries.len() > 10 && p.budget_used <= 400);
    // A host that accepts less than the answer is told which limit it hit.
    let tight = Runtime::load_bundled_limited(ctxpack_host::Limits {
        max_transfer_bytes: Some(1024),
        ..Default::default()
    })
    .unwrap();
    match run_component(&tight, &s) {
        Err(e) => assert!(e.to_string().contains("transfer limit hit"), "{e}"),
        Ok(o) => panic!("expected the transfer limit: {:?}", o.host_calls),
    }
    // Nothing was counted beyond what decided the cut.
    let counted = p
        .snapshot
        .entries
        .iter()
        .filter(|e| e.counted != Counted::Uncounted)
        .count();
    assert!(counted < 1_000, "{counted} counted");
}

#[test]
fn deep_and_cyclic_graph_expansions_end() {
    // The graph answers the retrieved items again (a cycle) and a long
    // chain, at the deepest depth that can be asked.
    let mut items: Vec<Value> = vec![
        item(
            "r1",
            "graph-neighbours",
            "The deploy uses blue-green switching.",
            0.9,
        ),
        item(
            "r2",
            "graph-neighbours",
            "Rollbacks take about four minutes.",
            0.5,
        ),
    ];
    items.extend((0..500).map(|i| {
        item(
            &format!("chain-{i}"),
            "graph-neighbours",
            &format!("Node {i} links to node {} in the dependency chain.", i + 1),
            1.0 / f64::from(i + 1),
        )
    }));
    let mut s = scenario(host_with("expand-graph", json!({"items": items})), 3000);
    if let ctxpack_core::Profile::Full(f) = &mut s.config.profile {
        f.graph_depth = u32::MAX;
    }
    let p = pack("graph", &both("graph", &s));
    for id in ["r1", "r2"] {
        let reasons = reason_of(&p, id);
        assert_eq!(reasons.len(), 2, "{id}");
        assert!(
            reasons.iter().any(|r| matches!(r, Reason::DuplicateOf(_))),
            "{id}: {reasons:?}"
        );
    }
    assert!(p.snapshot.entries.len() >= 500);
}

#[test]
fn invalid_configurations_are_refused_naming_the_field() {
    let cases: Vec<(&str, Value)> = vec![
        (
            "config.near-duplicate-threshold",
            json!({"near-duplicate-threshold": 0.0}),
        ),
        (
            "config.plan.shares",
            json!({"plan": {"shares": [
                {"section": "relevant-knowledge", "share": 0.8},
                {"section": "episodic-memory", "share": 0.8}
            ]}}),
        ),
        ("config.plan.cut-step", json!({"plan": {"cut-step": 0}})),
        (
            "config.plan.safety-margin",
            json!({"plan": {"safety-margin": 1.5}}),
        ),
        (
            "config.preload[0]",
            json!({"preload": [{"chars-per-token": 0}]}),
        ),
    ];
    for (field, config) in cases {
        let mut s = scenario(host_with("", json!(null)), 1000);
        s.config = serde_json::from_value(config).unwrap();
        match &both(field, &s).reply {
            Reply::Failed(f) => assert!(f.to_string().contains(field), "{field}: {f}"),
            other => panic!("{field}: {other:?}"),
        }
    }
}
