//! The invariants every assembled pack keeps, checked by the conformance
//! tests on every scenario, by the hostile-input tests and by the fuzz
//! targets' replay.

// Test support: a failed check is a failed test, so it panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ctxpack_core::{ContextPack, Layer, Origin, Role, SourceOutcome, Tokenizers};
use sha2::Digest;
use std::collections::{HashMap, HashSet};

/// An entry's text cut where the budget counts it apart: a host text (or a
/// summary) into its citation or fence and its body; the request's own
/// text whole.
pub fn framed_parts(e: &ctxpack_core::PackEntry) -> Vec<&str> {
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

pub fn check(
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
    // The content hash is the SHA-256 of the rendered text's bytes.
    let digest: String = sha2::Sha256::digest(pack.text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(snap.content_hash, digest, "{name}");
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
    let kept: Vec<(usize, &str)> = pack
        .entries
        .iter()
        .filter_map(|e| Some((e.id.strip_prefix("turn-")?.parse().ok()?, e.text.as_str())))
        .collect();
    let kept_turns: Vec<usize> = kept.iter().map(|&(i, _)| i).collect();
    // A kept turn is rendered whole from its request turn, and counted.
    for &(i, text) in &kept {
        let t = &request.conversation[i];
        assert_eq!(
            text,
            format!("[{}] {}", t.role.name(), t.content),
            "{name}: turn-{i}"
        );
    }
    // Kept calls by id, with where they are: a result answers a call made
    // before it (one that comes first answers nothing and is an orphan).
    let mut calls: HashMap<&str, usize> = HashMap::new();
    for &i in &kept_turns {
        let t = &request.conversation[i];
        match (t.role, t.tool_call_id.as_deref()) {
            (Role::Assistant, Some(id)) => {
                calls.insert(id, i);
            }
            (Role::Tool, Some(id)) => {
                assert!(
                    calls.contains_key(id),
                    "{name}: turn-{i} kept without its call"
                );
            }
            _ => {}
        }
    }
    for (j, t) in request.conversation.iter().enumerate() {
        if let (Role::Tool, Some(id)) = (t.role, t.tool_call_id.as_deref())
            && calls.get(id).is_some_and(|&call| call < j)
        {
            assert!(
                kept_turns.contains(&j),
                "{name}: result turn-{j} split from its call"
            );
        }
    }
    // The kept turns are one contiguous run ending at the newest turn that
    // can be kept (orphaned results, never kept, excepted).
    let orphaned = |k: usize| {
        snap.entries.iter().any(|e| {
            e.origin == Origin::Request
                && e.id == format!("turn-{k}")
                && e.reason == ctxpack_core::Reason::OrphanToolResult
        })
    };
    if let (Some(&first), Some(&last)) = (kept_turns.first(), kept_turns.last()) {
        let newest = (0..request.conversation.len())
            .rev()
            .find(|&k| !orphaned(k))
            .unwrap_or(0);
        assert_eq!(last, newest, "{name}: newest turn not kept");
        for k in first..=last {
            assert!(
                kept_turns.contains(&k) || orphaned(k),
                "{name}: gap at turn-{k}"
            );
        }
    }
}
